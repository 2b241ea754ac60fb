package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/pow"
	"github.com/seckill/seckill/store"
)

// Proof of work (docs/API.md "Proof of work") on the real database and
// Redis: a challenge per buyer and sale, each solution accepted once.

// createPoWSale creates a sale open since a minute ago whose claims need a
// proof of work of difficulty 1000 (the least), and returns its id.
func (r *handlerRig) createPoWSale(t *testing.T, stock int64) int64 {
	t.Helper()
	now := time.Now().UTC()
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "pow", "price_cents": 990, "stock": stock, "payment_timeout_seconds": 600,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"proof_of_work": map[string]any{"difficulty": 1000},
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, map[string]any{"difficulty": float64(1000)}, a.body["proof_of_work"])
	id, err := strconv.ParseInt(a.body["id"].(string), 10, 64)
	require.NoError(t, err)
	return id
}

// challengeFor gets a challenge for user on saleID.
func (r *handlerRig) challengeFor(t *testing.T, saleID int64, user string) pow.Challenge {
	t.Helper()
	req := httptest.NewRequest("GET", "/api/v1/sales/"+strconv.FormatInt(saleID, 10)+"/challenge", nil)
	req.Header.Set("Authorization", "Bearer "+r.token(t, user, false))
	resp := contract.Test(t, r.srv.App(), req)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var c pow.Challenge
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	return c
}

// solveChallenge finds c's number as a browser does, and returns the
// X-Seckill-Proof header's value (ALTCHA's payload, with its "took").
func solveChallenge(t *testing.T, c pow.Challenge) (string, int64) {
	t.Helper()
	for n := int64(0); n <= c.MaxNumber; n++ {
		sum := sha256.Sum256([]byte(c.Salt + strconv.FormatInt(n, 10)))
		if hex.EncodeToString(sum[:]) == c.Challenge {
			return proofHeader(c, n), n
		}
	}
	t.Fatalf("no number solves %+v", c)
	return "", 0
}

func proofHeader(c pow.Challenge, number int64) string {
	b, _ := json.Marshal(map[string]any{"algorithm": c.Algorithm, "challenge": c.Challenge, "number": number,
		"salt": c.Salt, "signature": c.Signature, "took": 12})
	return base64.StdEncoding.EncodeToString(b)
}

// post sends POST path as user with the given headers.
func (r *handlerRig) post(t *testing.T, path, user string, headers map[string]string) answer {
	t.Helper()
	req := httptest.NewRequest("POST", path, nil)
	req.Header.Set("Authorization", "Bearer "+r.token(t, user, false))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return r.send(t, req)
}

func claimsPath(saleID int64) string {
	return "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/claims"
}

func requireProofRefused(t *testing.T, a answer, detail string) {
	t.Helper()
	require.Equal(t, http.StatusForbidden, a.status, "%v", a.body)
	require.Equal(t, "PROOF_REQUIRED", a.code())
	require.Contains(t, a.body["detail"], detail)
}

func TestProof_AClaimNeedsItsOwnFreshSolution(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createPoWSale(t, 10)
	other := r.createPoWSale(t, 10)
	claims := claimsPath(saleID)

	// The challenge: ALTCHA's, of the sale's difficulty, bound in its
	// salt to the sale and the caller (by a hash, never the sub itself).
	c := r.challengeFor(t, saleID, "auth0|ann")
	require.Equal(t, "SHA-256", c.Algorithm)
	require.EqualValues(t, 1000, c.MaxNumber)
	require.Regexp(t, `^[0-9a-f]{24}\?sale=`+strconv.FormatInt(saleID, 10)+`&user=`+pow.UserHash("auth0|ann")+`&expires=\d+&$`, c.Salt)
	require.Equal(t, http.StatusUnauthorized, r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(saleID, 10)+"/challenge", "", false, nil).status)

	requireProofRefused(t, r.post(t, claims, "auth0|ann", nil), "needs a proof of work in the X-Seckill-Proof header")
	requireProofRefused(t, r.post(t, claims, "auth0|ann", map[string]string{api.HeaderProof: "not-a-proof"}), "is not a proof of work")

	good, n := solveChallenge(t, c)
	// Someone else's solution, or one for another sale, does not do.
	requireProofRefused(t, r.post(t, claims, "bob", map[string]string{api.HeaderProof: good}), "for another user")
	otherSale, _ := solveChallenge(t, r.challengeFor(t, other, "auth0|ann"))
	requireProofRefused(t, r.post(t, claims, "auth0|ann", map[string]string{api.HeaderProof: otherSale}), "for another sale")
	// Tampered: a wrong number, a signature this shop did not make.
	requireProofRefused(t, r.post(t, claims, "auth0|ann", map[string]string{api.HeaderProof: proofHeader(c, n+1)}), "does not solve its challenge")
	forged := c
	forged.Signature = strings.Repeat("0", 64)
	requireProofRefused(t, r.post(t, claims, "auth0|ann", map[string]string{api.HeaderProof: proofHeader(forged, n)}), "did not issue")

	// The refusals burned nothing: the solution is accepted once.
	a := r.post(t, claims, "auth0|ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	requireProofRefused(t, r.post(t, claims, "auth0|ann", map[string]string{api.HeaderProof: good}), "already used")

	// Expired: a challenge of the same key, signed with an expiry past.
	key := pow.NewKey(pow.DeriveKey(r.webhookSecret))
	old, err := key.Issue(saleID, "bob", 1000, time.Now().Add(-time.Second))
	require.NoError(t, err)
	stale, _ := solveChallenge(t, old)
	requireProofRefused(t, r.post(t, claims, "bob", map[string]string{api.HeaderProof: stale}), "expired")
	// The same key makes challenges the API takes: every replica agrees.
	fresh, err := key.Issue(saleID, "bob", 1000, time.Now().Add(time.Minute))
	require.NoError(t, err)
	bobs, _ := solveChallenge(t, fresh)
	a = r.post(t, claims, "bob", map[string]string{api.HeaderProof: bobs})
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
}

// A sale without proof_of_work needs none, and has no challenge.
func TestProof_ASaleWithoutProofOfWorkNeedsNone(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createSale(t, 3)
	a := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(saleID, 10), "", false, nil)
	require.NotContains(t, a.body, "proof_of_work")
	a = r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(saleID, 10)+"/challenge", "ann", false, nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, "NOT_FOUND", a.code())
	require.Contains(t, a.body["detail"], "needs no proof of work")
	r.claim(t, saleID, "ann")
	a = r.post(t, claimsPath(saleID), "bob", map[string]string{api.HeaderProof: "ignored"})
	require.Equal(t, http.StatusAccepted, a.status, "a header is ignored where none is needed")
	require.Equal(t, http.StatusNotFound, r.do(t, "GET", "/api/v1/sales/99999999/challenge", "ann", false, nil).status)
}

// A claim retried under its Idempotency-Key may show the same solution
// again and gets the first answer; a new request may not.
func TestProof_ARetryUnderTheSameIdempotencyKey(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createPoWSale(t, 5)
	good, _ := solveChallenge(t, r.challengeFor(t, saleID, "ann"))
	first := r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: good, api.HeaderIdempotencyKey: "k1"})
	require.Equal(t, http.StatusAccepted, first.status, "%v", first.body)
	again := r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: good, api.HeaderIdempotencyKey: "k1"})
	require.Equal(t, http.StatusAccepted, again.status, "%v", again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body["order_id"], again.body["order_id"])
	requireProofRefused(t, r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: good, api.HeaderIdempotencyKey: "k2"}), "already used")
	requireProofRefused(t, r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: good}), "already used")
}

// The waitlist's join needs a proof too, used once.
func TestProof_AWaitlistJoinNeedsOne(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createPoWSale(t, 1)
	good, _ := solveChallenge(t, r.challengeFor(t, saleID, "ann"))
	require.Equal(t, http.StatusAccepted, r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: good}).status)
	join := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	requireProofRefused(t, r.post(t, join, "bob", nil), "needs a proof of work")
	bobs, _ := solveChallenge(t, r.challengeFor(t, saleID, "bob"))
	a := r.post(t, join, "bob", map[string]string{api.HeaderProof: bobs})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "WAITING", a.body["status"])
	requireProofRefused(t, r.post(t, join, "bob", map[string]string{api.HeaderProof: bobs}), "already used")
}

// SECKILL_POW_KEY, when set, is the key; challenges are valid until 5
// minutes after a future start.
func TestProof_AConfiguredKeyAndAFutureStart(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	r := newHandlerRig(t, api.Config{ProofKey: key})
	now := time.Now().UTC()
	starts := now.Add(time.Hour).Truncate(time.Second)
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "later", "price_cents": 990, "stock": 2, "payment_timeout_seconds": 600,
		"starts_at": starts.Format(time.RFC3339), "ends_at": starts.Add(time.Hour).Format(time.RFC3339),
		"proof_of_work": map[string]any{"difficulty": 5000},
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	saleID, _ := strconv.ParseInt(a.body["id"].(string), 10, 64)
	c := r.challengeFor(t, saleID, "ann")
	require.EqualValues(t, 5000, c.MaxNumber)
	require.Contains(t, c.Salt, "&expires="+strconv.FormatInt(starts.Add(pow.Validity).Unix(), 10)+"&")
	h, _ := solveChallenge(t, c)
	_, err := pow.NewKey(key).Verify(h, saleID, "ann", now)
	require.NoError(t, err, "signed with the configured key")
	_, err = pow.NewKey(pow.DeriveKey(r.webhookSecret)).Verify(h, saleID, "ann", now)
	require.ErrorIs(t, err, pow.ErrSignature)
	// Before the start the claim is refused for that, and the proof is
	// not spent on it.
	a = r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: h})
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, "SALE_NOT_STARTED", a.code())
	use, err := r.rs.UseProof(t.Context(), saleID, "ann", c.Challenge, starts.Add(pow.Validity), "")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofTaken, use, "a refusal that costs nothing spends no proof")
}

// storePoWSale stores a sale of stock units whose claims need a proof of
// work (difficulty 1000), from starts for an hour, with a lobby opened an
// hour before when lobby is set. Unlike createPoWSale it may start in the
// past with a lobby whose draw is not done, and it is not warmed: warm
// loads it into Redis (a lobby sale held until its draw, as createSale
// does).
func (r *handlerRig) storePoWSale(t *testing.T, stock int64, starts time.Time, lobby, warm bool) *seckill.Sale {
	t.Helper()
	n := seckill.NewSale{Name: "pow", Currency: "usd", Variants: testenv.DefaultVariant("pow", 990, stock),
		StartsAt: starts, EndsAt: starts.Add(time.Hour), PaymentTimeout: 10 * time.Minute, ProofDifficulty: 1000}
	if lobby {
		opens := starts.Add(-time.Hour)
		n.LobbyOpensAt = &opens
	}
	sale, err := r.st.CreateSale(t.Context(), n, nil)
	require.NoError(t, err)
	if warm {
		r.warm(t, sale)
	}
	return sale
}

func (r *handlerRig) warm(t *testing.T, sale *seckill.Sale) {
	t.Helper()
	_, err := r.rs.Warm(t.Context(), seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: sale.Stock.Total}},
		StartsAt: seckill.ClaimsOpenAt(sale), EndsAt: sale.EndsAt})
	require.NoError(t, err)
}

// DRAW_IN_PROGRESS asks the buyer to come back (Retry-After): it decided
// nothing, so it spends no proof, with or without an Idempotency-Key, and
// the retry it asks for is decided with the same solution.
func TestProof_DrawInProgressSpendsNoProof(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	sale := r.storePoWSale(t, 3, time.Now().UTC().Add(-time.Second), true, true)
	good, _ := solveChallenge(t, r.challengeFor(t, sale.ID, "ann"))
	for _, key := range []string{"", "k1", ""} {
		headers := map[string]string{api.HeaderProof: good}
		if key != "" {
			headers[api.HeaderIdempotencyKey] = key
		}
		a := r.post(t, claimsPath(sale.ID), "ann", headers)
		require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
		require.Equal(t, "DRAW_IN_PROGRESS", a.code())
		require.Equal(t, "2", a.header.Get("Retry-After"))
	}

	require.NoError(t, r.rs.OpenClaims(t.Context(), sale.ID, sale.StartsAt)) // the draw is done
	a := r.post(t, claimsPath(sale.ID), "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	// The 202 decided: the solution is spent.
	requireProofRefused(t, r.post(t, claimsPath(sale.ID), "ann", map[string]string{api.HeaderProof: good}), "already used")
	requireProofRefused(t, r.post(t, claimsPath(sale.ID), "ann", map[string]string{api.HeaderProof: good, api.HeaderIdempotencyKey: "k1"}), "already used")
}

// A 503 (the sale's stock is not loaded in Redis yet) decided nothing: the
// retry it asks for may show the same solution.
func TestProof_UnavailableSpendsNoProof(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	sale := r.storePoWSale(t, 3, time.Now().UTC().Add(-time.Minute), false, false)
	good, _ := solveChallenge(t, r.challengeFor(t, sale.ID, "ann"))
	a := r.post(t, claimsPath(sale.ID), "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.Equal(t, "UNAVAILABLE", a.code())

	r.warm(t, sale)
	a = r.post(t, claimsPath(sale.ID), "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	requireProofRefused(t, r.post(t, claimsPath(sale.ID), "ann", map[string]string{api.HeaderProof: good}), "already used")
}

// A waitlist join before the start is refused SALE_NOT_STARTED before its
// proof is looked at, so the same solution joins once the sale has started;
// the join that decides spends it.
func TestProof_AWaitlistJoinBeforeTheStartSpendsNoProof(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	sale := r.storePoWSale(t, 1, time.Now().UTC().Add(1500*time.Millisecond), false, true)
	join := "/api/v1/sales/" + strconv.FormatInt(sale.ID, 10) + "/waitlist"
	// Refused before the proof is looked at, as a claim is.
	a := r.post(t, join, "ann", nil)
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, "SALE_NOT_STARTED", a.code())
	good, _ := solveChallenge(t, r.challengeFor(t, sale.ID, "ann"))
	a = r.post(t, join, "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, "SALE_NOT_STARTED", a.code())

	time.Sleep(time.Until(sale.StartsAt) + 50*time.Millisecond)
	a = r.post(t, join, "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "ADMITTED", a.body["status"], "the unit in stock is hers at once")
	requireProofRefused(t, r.post(t, join, "ann", map[string]string{api.HeaderProof: good}), "already used")
}

// A waitlist join during the draw is asked to come back, and keeps its
// proof for then.
func TestProof_AWaitlistJoinDuringTheDrawSpendsNoProof(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	sale := r.storePoWSale(t, 1, time.Now().UTC().Add(-time.Second), true, true)
	join := "/api/v1/sales/" + strconv.FormatInt(sale.ID, 10) + "/waitlist"
	good, _ := solveChallenge(t, r.challengeFor(t, sale.ID, "ann"))
	a := r.post(t, join, "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, "DRAW_IN_PROGRESS", a.code())

	require.NoError(t, r.rs.OpenClaims(t.Context(), sale.ID, sale.StartsAt))
	a = r.post(t, join, "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
}

// Copies of one solution sent at once: one is decided, every other is
// refused, as at any other time (a proof is held by one request at once).
func TestProof_CopiesSentAtOnceAreDecidedOnce(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createPoWSale(t, 10)
	good, _ := solveChallenge(t, r.challengeFor(t, saleID, "ann"))
	const copies = 12
	statuses := make([]int, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest("POST", claimsPath(saleID), nil)
			req.Header.Set("Authorization", "Bearer "+r.token(t, "ann", false))
			req.Header.Set(api.HeaderProof, good)
			resp, err := r.srv.App().Test(req, -1)
			if err == nil {
				statuses[i] = resp.StatusCode
				_ = resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	require.Equal(t, map[int]int{http.StatusAccepted: 1, http.StatusForbidden: copies - 1}, counts)
}

// flakyLobby is the database with a lobby that fails its next fails
// entries (the entry not made).
type flakyLobby struct {
	*store.Store
	fails atomic.Int32
}

func (f *flakyLobby) Enter(ctx context.Context, saleID int64, userID string, item seckill.Item) (*seckill.LobbyEntry, bool, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, false, errors.New("connection reset by peer")
	}
	return f.Store.Enter(ctx, saleID, userID, item)
}

// A lobby entry the database failed (500) decided nothing: the retry
// enters with the same solution, which that entry then spends.
func TestProof_AFailedLobbyEntrySpendsNoProof(t *testing.T) {
	flaky := &flakyLobby{}
	r := newHandlerRig(t, api.Config{Store: flaky})
	flaky.Store = r.st
	sale := r.storePoWSale(t, 1, time.Now().UTC().Add(30*time.Minute), true, true)
	lobby := "/api/v1/sales/" + strconv.FormatInt(sale.ID, 10) + "/lobby"
	good, _ := solveChallenge(t, r.challengeFor(t, sale.ID, "ann"))

	flaky.fails.Store(1)
	a := r.post(t, lobby, "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusInternalServerError, a.status, "%v", a.body)
	a = r.post(t, lobby, "ann", map[string]string{api.HeaderProof: good})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "ENTERED", a.body["status"])
	requireProofRefused(t, r.post(t, lobby, "ann", map[string]string{api.HeaderProof: good}), "already used")
}
