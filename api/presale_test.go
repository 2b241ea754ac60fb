package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
)

// vip is the presale claim of the tests' sales.
const vip = "/groups=vip"

// memberDo is do as user, whose token carries claims besides its subject.
func (r *handlerRig) memberDo(t *testing.T, method, path, user string, claims ...string) answer {
	t.Helper()
	extra := make([]auth.AdminClaim, len(claims))
	for i, c := range claims {
		extra[i] = auth.MustAdminClaim(c)
	}
	tok, err := auth.NewSecret(r.jwt, "", auth.AdminClaim{}).SignWith(user, false, time.Hour, extra...)
	require.NoError(t, err)
	req, err := http.NewRequest(method, path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	return r.send(t, req)
}

// presaleSale creates a sale of stock units starting at startsAt whose
// presale (claim vip) opened a minute ago.
func (r *handlerRig) presaleSale(t *testing.T, stock int64, startsAt time.Time) (int64, answer) {
	t.Helper()
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "drop", "price_cents": 990, "stock": stock,
		"starts_at": startsAt.UTC().Format(time.RFC3339Nano), "ends_at": startsAt.Add(time.Hour).UTC().Format(time.RFC3339),
		"presale": map[string]any{"starts_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "claim": vip},
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	id, err := strconv.ParseInt(a.body["id"].(string), 10, 64)
	require.NoError(t, err)
	return id, a
}

func TestPresale_TheSaleObjectShowsItAndItsState(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	startsAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	id, created := r.presaleSale(t, 3, startsAt)

	got := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	for _, a := range []answer{created, got} {
		require.Equal(t, string(seckill.StatePresale), a.body["state"])
		p := a.body["presale"].(map[string]any)
		require.Equal(t, vip, p["claim"], "as given")
		at, err := time.Parse(time.RFC3339, p["starts_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(-time.Minute), at, 5*time.Second)
	}
	plain := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(r.createSale(t, 1), 10), "", false, nil)
	require.NotContains(t, plain.body, "presale", "a sale without a presale shows none")
}

func TestPresale_BadBodiesAreRefusedNamingTheField(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	now := time.Now().UTC()
	starts := now.Add(time.Hour)
	base := func() map[string]any {
		return map[string]any{"name": "x", "price_cents": 1, "stock": 1,
			"starts_at": starts.Format(time.RFC3339), "ends_at": starts.Add(time.Hour).Format(time.RFC3339),
			"presale": map[string]any{"starts_at": now.Format(time.RFC3339), "claim": vip}}
	}
	presale := func(b map[string]any) map[string]any { return b["presale"].(map[string]any) }
	for name, tc := range map[string]struct {
		edit  func(map[string]any)
		field string
	}{
		"and a lobby":   {func(b map[string]any) { b["lobby_opens_at"] = now.Add(time.Minute).Format(time.RFC3339) }, "presale"},
		"not an object": {func(b map[string]any) { b["presale"] = "vip" }, "presale"},
		"no start":      {func(b map[string]any) { delete(presale(b), "starts_at") }, "presale.starts_at"},
		"a bad start":   {func(b map[string]any) { presale(b)["starts_at"] = "tomorrow" }, "presale.starts_at"},
		"at the start":  {func(b map[string]any) { presale(b)["starts_at"] = starts.Format(time.RFC3339) }, "presale.starts_at"},
		"after it": {func(b map[string]any) {
			presale(b)["starts_at"] = starts.Add(time.Minute).Format(time.RFC3339)
		}, "presale.starts_at"},
		"no claim":          {func(b map[string]any) { delete(presale(b), "claim") }, "presale.claim"},
		"a claim not a ptr": {func(b map[string]any) { presale(b)["claim"] = "groups=vip" }, "presale.claim"},
		"no value":          {func(b map[string]any) { presale(b)["claim"] = "/groups=" }, "presale.claim"},
		"no =":              {func(b map[string]any) { presale(b)["claim"] = "/groups" }, "presale.claim"},
		"a bad escape":      {func(b map[string]any) { presale(b)["claim"] = "/a~2b=vip" }, "presale.claim"},
		"a long claim":      {func(b map[string]any) { presale(b)["claim"] = "/g=" + strings.Repeat("v", 500) }, "presale.claim"},
		"a control char":    {func(b map[string]any) { presale(b)["claim"] = "/g=v\n" }, "presale.claim"},
		"a number claim":    {func(b map[string]any) { presale(b)["claim"] = 7 }, "presale.claim"},
	} {
		t.Run(name, func(t *testing.T) {
			b := base()
			tc.edit(b)
			a := r.do(t, "POST", "/api/v1/sales", "admin", true, b)
			require.Equal(t, http.StatusBadRequest, a.status, "%v", a.body)
			require.Equal(t, string(seckill.CodeInvalidRequest), a.code())
			require.True(t, strings.HasPrefix(a.body["detail"].(string), tc.field+":"), "%v", a.body["detail"])
		})
	}
	// The body itself is fine.
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, base())
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
}

// From the presale's start a member claims and joins; everyone else is
// answered SALE_NOT_STARTED, as before any sale's start, even once the
// members bought every unit; from starts_at everyone is admitted.
func TestPresale_MembersClaimAndJoinFirstEveryoneFromTheStart(t *testing.T) {
	r := newHandlerRig(t, api.Config{WaitlistMax: 10})
	startsAt := time.Now().Add(2 * time.Second)
	id, _ := r.presaleSale(t, 4, startsAt)
	claims := claimsPath(id)
	waitlist := "/api/v1/sales/" + strconv.FormatInt(id, 10) + "/waitlist"

	a := r.memberDo(t, "POST", claims, "pat")
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, string(seckill.CodeSaleNotStarted), a.code())
	require.Contains(t, a.body["detail"], startsAt.UTC().Format(time.RFC3339), "the answer says when the sale starts")
	a = r.memberDo(t, "POST", claims, "pat", "/groups=other", "/role=vip")
	require.Equal(t, string(seckill.CodeSaleNotStarted), a.code(), "another group, or vip at another claim, is no member")
	a = r.memberDo(t, "POST", waitlist, "pat")
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, string(seckill.CodeSaleNotStarted), a.code())

	a = r.memberDo(t, "POST", claims, "vic", vip)
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	a = r.memberDo(t, "POST", claims, "vin", "/groups=staff", vip)
	require.Equal(t, http.StatusAccepted, a.status, "a token whose groups hold vip among others: %v", a.body)
	a = r.memberDo(t, "POST", waitlist, "val", vip)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "ADMITTED", a.body["status"])
	a = r.memberDo(t, "POST", claims, "vera", vip)
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	a = r.memberDo(t, "POST", claims, "vlad", vip)
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, string(seckill.CodeSoldOut), a.code(), "the members bought every unit")
	a = r.memberDo(t, "POST", waitlist, "vlad", vip)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "WAITING", a.body["status"])

	// The sold-out flag the members' claims raised tells others nothing.
	a = r.memberDo(t, "POST", claims, "pat")
	require.Equal(t, string(seckill.CodeSaleNotStarted), a.code(), "%v", a.body)
	a = r.memberDo(t, "POST", waitlist, "pat")
	require.Equal(t, string(seckill.CodeSaleNotStarted), a.code(), "%v", a.body)

	time.Sleep(time.Until(startsAt) + 100*time.Millisecond)
	got := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	require.Equal(t, string(seckill.StateSoldOut), got.body["state"])
	a = r.memberDo(t, "POST", claims, "pat")
	require.Equal(t, string(seckill.CodeSoldOut), a.code(), "from the start a non-member is decided: %v", a.body)
	a = r.memberDo(t, "POST", waitlist, "pat")
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "WAITING", a.body["status"])
}

// From starts_at a non-member is admitted like anyone.
func TestPresale_FromTheStartEveryoneIsAdmitted(t *testing.T) {
	r := newHandlerRig(t, api.Config{WaitlistMax: 10})
	startsAt := time.Now().Add(1500 * time.Millisecond)
	id, _ := r.presaleSale(t, 5, startsAt)
	a := r.memberDo(t, "POST", claimsPath(id), "pat")
	require.Equal(t, string(seckill.CodeSaleNotStarted), a.code(), "%v", a.body)

	time.Sleep(time.Until(startsAt) + 100*time.Millisecond)
	got := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	require.Equal(t, string(seckill.StateActive), got.body["state"])
	a = r.memberDo(t, "POST", claimsPath(id), "pat")
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	a = r.memberDo(t, "POST", claimsPath(id), "vic", vip)
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	a = r.memberDo(t, "POST", "/api/v1/sales/"+strconv.FormatInt(id, 10)+"/waitlist", "pia")
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "ADMITTED", a.body["status"])
}
