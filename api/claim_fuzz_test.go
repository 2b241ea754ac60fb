package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/redis/go-redis/v9"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// claimRig is one API on a database and Redis prefix of its own, with two
// live sales: a big one (claims are admitted) and a one-unit one (sold out
// after the first). Nothing relays or releases claims, so every admission
// stays visible in Redis for the oracle.
type claimRig struct {
	srv          *api.Server
	rstore       *redisstore.Store
	rdb          *redis.Client // to look at (and tamper with) Redis directly
	secret       []byte
	big, tiny    int64
	totals       map[int64]int64
	otherSaleIDs []string
}

func newClaimRig(t testing.TB) *claimRig { return newClaimRigWith(t, api.Config{}) }

// newClaimRigWith is newClaimRig with cfg's tuning fields.
func newClaimRigWith(t testing.TB, cfg api.Config) *claimRig {
	t.Helper()
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rstore := redisstore.New(rdb, prefix)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(context.Background(), rstore.IDNodes(), log)
	if err != nil {
		t.Fatal(err)
	}
	r := &claimRig{rstore: rstore, rdb: rdb, secret: []byte("fuzz-jwt-secret"), totals: map[int64]int64{}}
	cfg.Store, cfg.Redis, cfg.IDs, cfg.JWTSecret, cfg.Log = st, rstore, ids, r.secret, log
	r.srv = api.New(cfg)
	r.big = r.createSale(t, 1_000_000)
	r.tiny = r.createSale(t, 1)
	return r
}

func (r *claimRig) createSale(t testing.TB, stock int64) int64 {
	t.Helper()
	admin, err := auth.SignToken(r.secret, "fuzz-admin", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "fuzz", "price_cents": 990, "stock": stock,
		"starts_at": now.Add(-time.Hour).Format(time.RFC3339), "ends_at": now.Add(24 * time.Hour).Format(time.RFC3339),
	})
	req := httptest.NewRequest("POST", "/api/v1/sales", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp := contract.Test(t, r.srv.App(), req)
	var sale struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&sale) != nil {
		t.Fatalf("create sale: %s", resp.Status)
	}
	id, _ := strconv.ParseInt(sale.ID, 10, 64)
	r.totals[id] = stock
	return id
}

// state is what the oracle compares before and after a request.
type saleState struct {
	remaining int64
	claims    map[string]int64
	outbox    int64
}

func (r *claimRig) state(t *testing.T, saleID int64) saleState {
	t.Helper()
	ctx := context.Background()
	n, ok, err := r.rstore.Remaining(ctx, saleID)
	if err != nil || !ok {
		t.Fatalf("remaining of sale %d: %v (warmed: %v)", saleID, err, ok)
	}
	claims, err := r.rstore.Claims(ctx, saleID)
	if err != nil {
		t.Fatal(err)
	}
	outbox, err := r.rdb.XLen(ctx, r.rstore.SaleKeys(saleID).Outbox).Result()
	if err != nil {
		t.Fatal(err)
	}
	return saleState{remaining: n, claims: claims, outbox: outbox}
}

type claimAnswer struct {
	status   int
	ctype    string
	retry    string
	loc      string
	replayed bool
	body     []byte
	decoded  struct {
		OrderID string       `json:"order_id"`
		SaleID  string       `json:"sale_id"`
		Status  string       `json:"status"`
		Code    seckill.Code `json:"code"`
	}
}

func (r *claimRig) send(t *testing.T, path, bearer, idemKey string, body []byte) claimAnswer {
	t.Helper()
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", bearer)
	}
	if idemKey != "" {
		req.Header["Idempotency-Key"] = []string{idemKey}
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json") // as the contract's clients send it
	}
	resp := contract.Test(t, r.srv.App(), req)
	defer func() { _ = resp.Body.Close() }()
	a := claimAnswer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"),
		retry: resp.Header.Get("Retry-After"), loc: resp.Header.Get("Location"),
		replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	a.body, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(a.body, &a.decoded)
	return a
}

var (
	// pathSafeRE: a path segment the router sees as one segment, as sent.
	pathSafeRE = regexp.MustCompile(`^[A-Za-z0-9._~!$&'()*+,;=:@%-]+$`)
)

// FuzzClaim drives POST /api/v1/sales/{id}/claims end to end (Fiber,
// bearer auth, the sale cache, the admission script on real Redis) with
// hostile paths, users, Authorization headers, Idempotency-Keys and bodies.
//
// The oracle, from docs/API.md: the answer is 202 or a documented problem
// (never 5xx: Redis is up); 202 only for a valid token, a valid or absent
// key and a real sale, and then the user's claim and one outbox entry exist
// and stock fell by one; any other answer writes nothing; ALREADY_CLAIMED
// names the claim that exists; remaining + claims == total always; a
// replayed Idempotency-Key returns the first answer byte for byte.
func FuzzClaim(f *testing.F) {
	for _, s := range []struct {
		which         uint8
		path, user    string
		rawAuth, idem string
		body          []byte
	}{
		{0, "", "alice", "", "", nil},
		{0, "", "alice", "", "k1", nil},
		{0, "", "bob", "", "k1", []byte(`{"quantity": 1000}`)},
		{1, "", "carol", "", "", nil},
		{1, "", "dave", "", "", nil},
		{2, "0", "erin", "", "", nil},
		{2, "-1", "erin", "", "", nil},
		{2, "99999999999999999999", "erin", "", "", nil},
		{2, "1%20OR%201=1", "erin", "", "", nil},
		{2, "%E2%98%83", "erin", "", "", nil},
		{2, "..", "erin", "", "", nil},
		{2, "1", "ivan", "", "", nil},
		{2, "2", "ivan", "", "", nil},
		{2, "01", "judy", "", "", nil},
		{2, "+2", "judy", "", "", nil},
		{0, "", "not a user", "Bearer x.y.z", "", nil},
		{0, "", "", "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0.", "", nil},
		{0, "", "", "Basic YTpi", "", nil},
		{0, "", "frank", "", "\x00bad", nil},
		{0, "", "frank", "", "é", nil},
		{0, "", "grace", "", string(bytes.Repeat([]byte("k"), 256)), nil},
		{0, "", string(bytes.Repeat([]byte("u"), 65)), "", "", nil},
		{0, "", "heidi", "", "", []byte("{not json")},
	} {
		f.Add(s.which, s.path, s.user, s.rawAuth, s.idem, s.body)
	}
	r := newClaimRig(f)
	f.Fuzz(func(t *testing.T, which uint8, rawPath, user, rawAuth, idem string, body []byte) {
		if len(body) > 4096 || len(rawPath) > 256 || len(rawAuth) > 4096 || len(idem) > 512 || len(user) > 128 {
			t.Skip("bounded input")
		}
		if strings.ContainsAny(idem, "\r\n") {
			t.Skip("a header cannot carry a line break") // net/http rewrites it
		}
		// The key as the server reads it: HTTP strips surrounding blanks.
		wireIdem := strings.Trim(idem, " \t")
		var pathID string
		switch which % 3 {
		case 0:
			pathID = strconv.FormatInt(r.big, 10)
		case 1:
			pathID = strconv.FormatInt(r.tiny, 10)
		default:
			pathID = rawPath
		}
		if !pathSafeRE.MatchString(pathID) || pathID == "." || pathID == ".." {
			t.Skip("not one path segment") // the router, not the claim path
		}
		if _, err := url.PathUnescape(pathID); err != nil {
			t.Skip("not a valid escape")
		}
		validUser := auth.ValidSubject(user) && rawAuth == ""
		bearer := rawAuth
		if validUser {
			tok, err := auth.SignToken(r.secret, user, false, time.Hour)
			if err != nil {
				t.Fatalf("sign for valid user %q: %v", user, err)
			}
			bearer = "Bearer " + tok
		}
		// Only a canonical decimal id names a sale: "007" or "+7" do not.
		target := int64(0)
		if id, err := strconv.ParseInt(pathID, 10, 64); err == nil && strconv.FormatInt(id, 10) == pathID {
			if _, live := r.totals[id]; live {
				target = id
			}
		}
		var before saleState
		if target != 0 {
			before = r.state(t, target)
		}
		path := "/api/v1/sales/" + pathID + "/claims"
		a := r.send(t, path, bearer, idem, body)

		if a.status >= 500 {
			t.Fatalf("%s: %d %s (Redis and Postgres are up)", path, a.status, a.body)
		}
		if a.status != http.StatusAccepted {
			if a.ctype != "application/problem+json" || a.decoded.Code == "" {
				t.Fatalf("%s: %d with %q %s: not a problem document", path, a.status, a.ctype, a.body)
			}
			if api.Status(a.decoded.Code) != a.status {
				t.Fatalf("%s: code %s with status %d", path, a.decoded.Code, a.status)
			}
		}
		validKey := wireIdem == "" || api.ValidIdempotencyKey(wireIdem)
		switch {
		case validUser && target != 0 && !oneDefaultUnit(body):
			// The rig's sales have one variant, "default", and a limit of 1.
			if a.decoded.Code != seckill.CodeInvalidRequest {
				t.Fatalf("body %q: %d %s", body, a.status, a.body)
			}
		case !validUser:
			if a.status != http.StatusUnauthorized {
				t.Fatalf("no valid token (auth %q): %d %s", bearer, a.status, a.body)
			}
		case target == 0:
			if a.decoded.Code != seckill.CodeSaleNotFound {
				t.Fatalf("sale %q does not exist: %d %s", pathID, a.status, a.body)
			}
		case !validKey:
			if a.decoded.Code != seckill.CodeInvalidRequest {
				t.Fatalf("Idempotency-Key %q: %d %s", idem, a.status, a.body)
			}
		default:
			switch a.decoded.Code {
			case "", seckill.CodeSoldOut, seckill.CodeAlreadyClaimed:
			default:
				t.Fatalf("valid claim on live sale %d: %d %s", target, a.status, a.body)
			}
		}
		if target == 0 {
			return
		}

		after := r.state(t, target)
		if after.remaining+int64(len(after.claims)) != r.totals[target] {
			t.Fatalf("sale %d: remaining %d + claims %d != total %d", target, after.remaining, len(after.claims), r.totals[target])
		}
		if int64(len(after.claims)) != after.outbox {
			t.Fatalf("sale %d: %d claims but %d outbox entries", target, len(after.claims), after.outbox)
		}
		_, had := before.claims[user]
		switch {
		case a.replayed:
			// A replay writes nothing; an admission it repeats still holds
			// here, where nothing releases claims.
			if after.remaining != before.remaining || after.outbox != before.outbox {
				t.Fatalf("replayed %d %s wrote", a.status, a.body)
			}
			if a.status == http.StatusAccepted && a.decoded.OrderID != strconv.FormatInt(after.claims[user], 10) {
				t.Fatalf("replayed 202 names %s; the claim is %d", a.decoded.OrderID, after.claims[user])
			}
		case a.status == http.StatusAccepted:
			if had {
				t.Fatalf("202 for %q, who already held a claim", user)
			}
			want := strconv.FormatInt(after.claims[user], 10)
			if a.decoded.OrderID != want || a.decoded.SaleID != pathID || a.decoded.Status != "QUEUED" ||
				a.loc != "/api/v1/orders/"+want {
				t.Fatalf("202 %s (Location %q) but the claim is %s", a.body, a.loc, want)
			}
			if after.remaining != before.remaining-1 || after.outbox != before.outbox+1 {
				t.Fatalf("202: remaining %d->%d, outbox %d->%d", before.remaining, after.remaining, before.outbox, after.outbox)
			}
		default:
			if after.remaining != before.remaining || after.outbox != before.outbox || len(after.claims) != len(before.claims) {
				t.Fatalf("%d %s wrote: remaining %d->%d, outbox %d->%d", a.status, a.body,
					before.remaining, after.remaining, before.outbox, after.outbox)
			}
			if a.decoded.Code == seckill.CodeAlreadyClaimed {
				if want := strconv.FormatInt(after.claims[user], 10); !had || a.decoded.OrderID != want {
					t.Fatalf("ALREADY_CLAIMED names %q; the claim is %q (held before: %v)", a.decoded.OrderID, want, had)
				}
			}
			if a.decoded.Code == seckill.CodeSoldOut && before.remaining != 0 {
				t.Fatalf("SOLD_OUT with %d remaining", before.remaining)
			}
		}
		if wireIdem != "" && validKey && validUser && oneDefaultUnit(body) { // a refused body decided nothing
			again := r.send(t, path, bearer, idem, body)
			if !again.replayed {
				t.Fatalf("second send of key %q not marked Idempotent-Replayed", idem)
			}
			if again.status != a.status || !bytes.Equal(again.body, a.body) {
				t.Fatalf("replay of key %q: %d %s, first %d %s", idem, again.status, again.body, a.status, a.body)
			}
			if final := r.state(t, target); final.remaining != after.remaining || final.outbox != after.outbox {
				t.Fatalf("replay of key %q wrote", idem)
			}
		}
	})
}

// oneDefaultUnit reports whether body is a claim's body the rig's sales
// accept: none, or {"sku": "default", "quantity": 1} with either left out
// (unknown fields are ignored, as encoding/json does).
func oneDefaultUnit(body []byte) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	var r struct {
		SKU      *string `json:"sku"`
		Quantity *int64  `json:"quantity"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil || dec.More() {
		return false
	}
	return (r.SKU == nil || *r.SKU == seckill.DefaultSKU) && (r.Quantity == nil || *r.Quantity == 1)
}
