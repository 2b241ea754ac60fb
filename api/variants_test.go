package api_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// shoeSale creates an open sale of two sizes (eu-42: 3 at 120.00, eu-43: 5
// at 125.00) with a limit of 2 per buyer, and returns its id and answer.
func (r *handlerRig) shoeSale(t *testing.T) (int64, answer) {
	t.Helper()
	now := time.Now().UTC()
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "Runner 1", "currency": "eur", "limit_per_buyer": 2,
		"variants": []map[string]any{
			{"sku": "eu-42", "name": "EU 42", "price_cents": 12000, "stock": 3},
			{"sku": "eu-43", "name": "EU 43", "price_cents": 12500, "stock": 5},
		},
		"payment_timeout_seconds": 600,
		"starts_at":               now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	id, err := strconv.ParseInt(a.body["id"].(string), 10, 64)
	require.NoError(t, err)
	return id, a
}

func TestVariants_ASaleOfSizesShowsEachSizesStockAndTheirSum(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id, created := r.shoeSale(t)

	for _, a := range []answer{created, r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)} {
		require.Equal(t, float64(2), a.body["limit_per_buyer"])
		require.Equal(t, float64(12000), a.body["price_cents"], "the lowest variant price")
		require.Equal(t, map[string]any{"total": 8.0, "remaining": 8.0, "available": 8.0, "locked": 0.0, "sold": 0.0}, a.body["stock"])
		variants := a.body["variants"].([]any)
		require.Len(t, variants, 2)
		require.Equal(t, map[string]any{"sku": "eu-42", "name": "EU 42", "price_cents": 12000.0,
			"stock": map[string]any{"total": 3.0, "remaining": 3.0, "available": 3.0, "locked": 0.0, "sold": 0.0}}, variants[0])
		require.Equal(t, "eu-43", variants[1].(map[string]any)["sku"])
	}
}

func TestVariants_AV3BodyMakesOneVariantDefault(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id := r.createSale(t, 4)
	a := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	require.Equal(t, float64(1), a.body["limit_per_buyer"])
	variants := a.body["variants"].([]any)
	require.Len(t, variants, 1)
	require.Equal(t, "default", variants[0].(map[string]any)["sku"])
	require.Equal(t, "handlers", variants[0].(map[string]any)["name"], "named as the sale")

	// A claim without a body takes one unit of it.
	c := r.do(t, "POST", claimsPath(id), "alice", false, nil)
	require.Equal(t, http.StatusAccepted, c.status, "%v", c.body)
	require.Equal(t, "default", c.body["sku"])
	require.Equal(t, float64(1), c.body["quantity"])
	require.Equal(t, float64(990), c.body["amount_cents"])
}

func TestVariants_BadSaleBodiesAreRefusedNamingTheField(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	now := time.Now().UTC()
	base := func() map[string]any {
		return map[string]any{"name": "x", "starts_at": now.Add(time.Hour).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339),
			"variants": []map[string]any{{"sku": "a", "name": "A", "price_cents": 1, "stock": 1}}}
	}
	for name, tc := range map[string]struct {
		edit  func(map[string]any)
		field string
	}{
		"both forms": {func(b map[string]any) { b["stock"] = 5 }, "variants"},
		"no variant": {func(b map[string]any) { b["variants"] = []any{} }, "variants"},
		"a bad sku":  {func(b map[string]any) { b["variants"].([]map[string]any)[0]["sku"] = "eu 42" }, "variants[0].sku"},
		"a long sku": {func(b map[string]any) { b["variants"].([]map[string]any)[0]["sku"] = strings.Repeat("a", 65) }, "variants[0].sku"},
		"a sku twice": {func(b map[string]any) {
			b["variants"] = append(b["variants"].([]map[string]any), map[string]any{"sku": "a", "name": "B", "price_cents": 1, "stock": 1})
		}, "variants[1].sku"},
		"no name":          {func(b map[string]any) { delete(b["variants"].([]map[string]any)[0], "name") }, "variants[0].name"},
		"no stock":         {func(b map[string]any) { b["variants"].([]map[string]any)[0]["stock"] = 0 }, "variants[0].stock"},
		"a negative price": {func(b map[string]any) { b["variants"].([]map[string]any)[0]["price_cents"] = -1 }, "variants[0].price_cents"},
		"a limit of 0":     {func(b map[string]any) { b["limit_per_buyer"] = 0 }, "limit_per_buyer"},
		"a limit over 100": {func(b map[string]any) { b["limit_per_buyer"] = 101 }, "limit_per_buyer"},
		"101 variants":     {func(b map[string]any) { b["variants"] = manyVariants(101) }, "variants"},
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
}

func manyVariants(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"sku": "v" + strconv.Itoa(i), "name": "V", "price_cents": 1, "stock": 1}
	}
	return out
}

func TestClaims_AClaimTakesItsQuantityOfOneVariantOrNothing(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id, _ := r.shoeSale(t)

	a := r.do(t, "POST", claimsPath(id), "alice", false, map[string]any{"sku": "eu-42", "quantity": 2})
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	require.Equal(t, "eu-42", a.body["sku"])
	require.Equal(t, float64(2), a.body["quantity"])
	require.Equal(t, float64(24000), a.body["amount_cents"], "quantity x the variant's price")
	require.Equal(t, "eur", a.body["currency"])

	// One unit of eu-42 is left: two are not there, and none is taken.
	a = r.do(t, "POST", claimsPath(id), "bob", false, map[string]any{"sku": "eu-42", "quantity": 2})
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, string(seckill.CodeNotEnoughStock), a.code())
	require.Equal(t, float64(1), a.body["remaining"])

	// Another size is another stock; the buyer's one order is per sale.
	a = r.do(t, "POST", claimsPath(id), "bob", false, map[string]any{"sku": "eu-43", "quantity": 2})
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	require.Equal(t, float64(25000), a.body["amount_cents"])
	a = r.do(t, "POST", claimsPath(id), "alice", false, map[string]any{"sku": "eu-43"})
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, string(seckill.CodeAlreadyClaimed), a.code(), "one active order per buyer per sale, whatever its variant")

	s := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	variants := s.body["variants"].([]any)
	require.Equal(t, float64(1), variants[0].(map[string]any)["stock"].(map[string]any)["remaining"])
	require.Equal(t, float64(3), variants[1].(map[string]any)["stock"].(map[string]any)["remaining"])
	require.Equal(t, float64(4), s.body["stock"].(map[string]any)["remaining"], "the sum, in units")

	// The last unit of eu-42 goes; then it is SOLD_OUT, while eu-43 is not.
	require.Equal(t, http.StatusAccepted, r.do(t, "POST", claimsPath(id), "carol", false, map[string]any{"sku": "eu-42"}).status)
	a = r.do(t, "POST", claimsPath(id), "dave", false, map[string]any{"sku": "eu-42"})
	require.Equal(t, string(seckill.CodeSoldOut), a.code())
	require.Equal(t, http.StatusAccepted, r.do(t, "POST", claimsPath(id), "dave", false, map[string]any{"sku": "eu-43"}).status,
		"a sold-out size leaves the other sizes open")
}

func TestClaims_BadItemsAreRefusedNamingTheField(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id, _ := r.shoeSale(t)
	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"no sku for a sale of sizes": {nil, "sku"},
		"an unknown sku":             {map[string]any{"sku": "eu-44"}, "sku"},
		"a quantity over the limit":  {map[string]any{"sku": "eu-42", "quantity": 3}, "quantity"},
		"a quantity of 0":            {map[string]any{"sku": "eu-42", "quantity": 0}, "quantity"},
		"a quantity as text":         {map[string]any{"sku": "eu-42", "quantity": "2"}, "quantity"},
	} {
		t.Run(name, func(t *testing.T) {
			a := r.do(t, "POST", claimsPath(id), "erin", false, tc.body)
			require.Equal(t, http.StatusBadRequest, a.status, "%v", a.body)
			require.Equal(t, string(seckill.CodeInvalidRequest), a.code())
			require.True(t, strings.HasPrefix(a.body["detail"].(string), tc.field+":"), "%v", a.body["detail"])
		})
	}
	// Nothing was decided: erin can still claim.
	require.Equal(t, http.StatusAccepted, r.do(t, "POST", claimsPath(id), "erin", false, map[string]any{"sku": "eu-42"}).status)
}

func TestClaims_AnIdempotencyKeyIsBoundToItsBody(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id, _ := r.shoeSale(t)
	claim := func(body string) answer {
		req := httptest.NewRequest("POST", claimsPath(id), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+r.token(t, "frank", false))
		req.Header.Set(api.HeaderIdempotencyKey, "k-1")
		return r.send(t, req)
	}
	first := claim(`{"sku": "eu-43", "quantity": 2}`)
	require.Equal(t, http.StatusAccepted, first.status, "%v", first.body)

	again := claim(`{"quantity": 2, "sku": "eu-43"}`)
	require.Equal(t, http.StatusAccepted, again.status, "the same body again: the first answer")
	require.Equal(t, first.body["order_id"], again.body["order_id"])
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	for _, other := range []string{`{"sku": "eu-43", "quantity": 1}`, `{"sku": "eu-42", "quantity": 2}`} {
		a := claim(other)
		require.Equal(t, http.StatusUnprocessableEntity, a.status, "%s: %v", other, a.body)
		require.Equal(t, string(seckill.CodeIdempotencyKeyReused), a.code())
	}
	s := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	require.Equal(t, float64(3), s.body["variants"].([]any)[1].(map[string]any)["stock"].(map[string]any)["remaining"],
		"nothing was decided for another body")
}
