package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

func restockPath(saleID int64, sku string) string {
	return "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/variants/" + sku + "/stock"
}

// restock sends POST .../variants/{sku}/stock with body (JSON, nil for
// none) as an admin, with key as its Idempotency-Key ("" for none).
func (r *handlerRig) restock(t *testing.T, saleID int64, sku, key string, body any) answer {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req := httptest.NewRequest("POST", restockPath(saleID, sku), bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token(t, "admin", true))
	if key != "" {
		req.Header.Set(api.HeaderIdempotencyKey, key)
	}
	return r.send(t, req)
}

// variantOf is the variant sku of a sale object.
func variantOf(t *testing.T, sale map[string]any, sku string) map[string]any {
	t.Helper()
	for _, v := range sale["variants"].([]any) {
		if v := v.(map[string]any); v["sku"] == sku {
			return v
		}
	}
	t.Fatalf("the sale has no variant %s: %v", sku, sale)
	return nil
}

func stockOf(total, remaining, available float64) map[string]any {
	return map[string]any{"total": total, "remaining": remaining, "available": available, "locked": 0.0, "sold": 0.0}
}

// A restock adds to one variant once per Idempotency-Key and answers the
// sale as GET /sales/{id} shows it; the same key again answers the same
// and adds nothing; the same key for another restock is refused.
func TestRestock_AddsToTheVariantOncePerKey(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id, _ := r.shoeSale(t)

	a := r.restock(t, id, "eu-42", "restock-1", map[string]any{"add": 4})

	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, strconv.FormatInt(id, 10), a.body["id"])
	require.Equal(t, "ACTIVE", a.body["state"])
	require.Equal(t, stockOf(7, 7, 7), variantOf(t, a.body, "eu-42")["stock"])
	require.Equal(t, stockOf(5, 5, 5), variantOf(t, a.body, "eu-43")["stock"])
	require.Equal(t, stockOf(12, 12, 12), a.body["stock"])
	require.Empty(t, a.header.Get("Idempotent-Replayed"))
	got := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil)
	require.Equal(t, a.body, got.body, "the answer is the sale as everyone reads it")

	again := r.restock(t, id, "eu-42", "restock-1", map[string]any{"add": 4})
	require.Equal(t, http.StatusOK, again.status, "%v", again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, a.body, again.body, "nothing added twice")

	for _, reuse := range []struct {
		sku string
		add int
	}{{"eu-42", 5}, {"eu-43", 4}} {
		a := r.restock(t, id, reuse.sku, "restock-1", map[string]any{"add": reuse.add})
		require.Equal(t, http.StatusUnprocessableEntity, a.status, "%v", a.body)
		require.Equal(t, "IDEMPOTENCY_KEY_REUSED", a.code())
	}
	require.Equal(t, stockOf(12, 12, 12), r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil).body["stock"])

	// Refusals, each naming what is wrong.
	for name, c := range map[string]struct {
		sale   int64
		sku    string
		key    string
		body   any
		status int
		code   string
		detail string
	}{
		"no key":           {id, "eu-42", "", map[string]any{"add": 1}, 400, "INVALID_REQUEST", "Idempotency-Key"},
		"no add":           {id, "eu-42", "k", map[string]any{}, 400, "INVALID_REQUEST", "add"},
		"no body":          {id, "eu-42", "k", nil, 400, "INVALID_REQUEST", "body"},
		"add 0":            {id, "eu-42", "k", map[string]any{"add": 0}, 400, "INVALID_REQUEST", "add"},
		"add too many":     {id, "eu-42", "k", map[string]any{"add": seckill.MaxRestock + 1}, 400, "INVALID_REQUEST", "add"},
		"add not a number": {id, "eu-42", "k", map[string]any{"add": "4"}, 400, "INVALID_REQUEST", "add"},
		"unknown sku":      {id, "eu-45", "k", map[string]any{"add": 1}, 404, "VARIANT_NOT_FOUND", "eu-45"},
		"unknown sale":     {id + 1000, "eu-42", "k", map[string]any{"add": 1}, 404, "SALE_NOT_FOUND", ""},
	} {
		a := r.restock(t, c.sale, c.sku, c.key, c.body)
		require.Equal(t, c.status, a.status, "%s: %v", name, a.body)
		require.Equal(t, c.code, a.code(), name)
		require.Contains(t, a.body["detail"], c.detail, name)
	}
	buyer := r.do(t, "POST", restockPath(id, "eu-42"), "bob", false, map[string]any{"add": 1})
	require.Equal(t, http.StatusForbidden, buyer.status, "an admin's act")
	require.Equal(t, stockOf(12, 12, 12), r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil).body["stock"])
}

// A sold-out sale that is restocked is ACTIVE again, and a buyer this
// process had answered SOLD_OUT is admitted at once.
func TestRestock_ASoldOutSaleBecomesActiveAndTakesClaims(t *testing.T) {
	r := newHandlerRig(t, api.Config{SoldOutTTL: time.Hour})
	id := r.createSale(t, 1)
	r.claim(t, id, "ann")
	a := r.do(t, "POST", claimsPath(id), "bob", false, nil)
	require.Equal(t, "SOLD_OUT", a.code())
	require.Equal(t, "SOLD_OUT", r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil).body["state"])

	a = r.restock(t, id, "default", "more", map[string]any{"add": 2})

	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, "ACTIVE", a.body["state"])
	require.Equal(t, map[string]any{"total": 3.0, "remaining": 2.0, "available": 3.0, "locked": 0.0, "sold": 0.0}, a.body["stock"],
		"ann's order is not written yet: her unit is the database's available and Redis' claimed")
	r.claim(t, id, "bob") // the sold-out flag (an hour here) is cleared
}

// Buyers waiting in line get the restocked units first, each an order as
// a released unit gives; only the rest is open to claims.
func TestRestock_WaitingBuyersAreServedFirst(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id := r.createSale(t, 1)
	r.claim(t, id, "ann")
	line := "/api/v1/sales/" + strconv.FormatInt(id, 10) + "/waitlist"
	for _, u := range []string{"bob", "cat"} {
		require.Equal(t, http.StatusCreated, r.do(t, "POST", line, u, false, nil).status)
	}

	a := r.restock(t, id, "default", "more", map[string]any{"add": 3})

	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.EqualValues(t, 1, a.body["stock"].(map[string]any)["remaining"], "two went to the line")
	for _, u := range []string{"bob", "cat"} {
		me := r.do(t, "GET", line+"/me", u, false, nil)
		require.Equal(t, "ADMITTED", me.body["status"], "%s: %v", u, me.body)
		order := r.do(t, "GET", "/api/v1/orders/"+me.body["order_id"].(string), u, false, nil)
		require.Equal(t, http.StatusOK, order.status, "%v", order.body)
		require.Equal(t, "QUEUED", order.body["status"])
	}
}

// A sale takes restocks until it ends; a retry of one made before the end
// still gets its first answer.
func TestRestock_AnEndedSaleTakesNoMore(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id := r.createSale(t, 2)
	require.Equal(t, http.StatusOK, r.restock(t, id, "default", "before", map[string]any{"add": 1}).status)
	require.NoError(t, r.st.Gorm().Exec(`UPDATE sales SET ends_at = ? WHERE id = ?`, time.Now().Add(-time.Second), id).Error)

	a := r.restock(t, id, "default", "after", map[string]any{"add": 1})
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, "SALE_ENDED", a.code())

	a = r.restock(t, id, "default", "before", map[string]any{"add": 1})
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, "ENDED", a.body["state"])
	require.EqualValues(t, 3, a.body["stock"].(map[string]any)["total"])
}

// A sale with a lobby is restocked only once its draw is done: the draw
// gives the units there are when the lobby closes.
func TestRestock_ALobbySaleWaitsForItsDraw(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	now := time.Now().UTC()
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "drawn", "price_cents": 990, "stock": 2,
		"lobby_opens_at": now.Add(-time.Minute).Format(time.RFC3339),
		"starts_at":      now.Add(time.Hour).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	id, err := strconv.ParseInt(a.body["id"].(string), 10, 64)
	require.NoError(t, err)

	a = r.restock(t, id, "default", "k", map[string]any{"add": 1})

	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)
	require.Equal(t, "DRAW_IN_PROGRESS", a.code())
	require.EqualValues(t, 2, r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10), "", false, nil).body["stock"].(map[string]any)["total"])
}

// A sale whose stock Redis does not hold takes the restock in the
// database and answers 503; the re-warm loads it without the restock's
// units, and the retry with the same key places them, once.
func TestRestock_ASaleRedisLostIsRestockedAfterItsReWarm(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	ctx := t.Context()
	now := time.Now().UTC()
	sale, err := r.st.CreateSale(ctx, seckill.NewSale{Name: "lost", Currency: "usd",
		Variants: []seckill.NewVariant{{SKU: seckill.DefaultSKU, Name: "lost", PriceCents: 990, Stock: 2}},
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Minute}, nil)
	require.NoError(t, err)

	a := r.restock(t, sale.ID, "default", "k", map[string]any{"add": 3})
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.Equal(t, "UNAVAILABLE", a.code())
	require.Contains(t, a.body["detail"], "recorded")

	snap, err := r.st.WarmSnapshot(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), snap.Units[seckill.DefaultSKU], "the re-warm leaves the restock not applied out")
	loaded, err := r.rs.Rewarm(ctx, seckill.WarmSpecOf(snap.Sale, snap.Units), nil)
	require.NoError(t, err)
	require.True(t, loaded)

	for range 2 {
		a = r.restock(t, sale.ID, "default", "k", map[string]any{"add": 3})
		require.Equal(t, http.StatusOK, a.status, "%v", a.body)
		require.Equal(t, stockOf(5, 5, 5), a.body["stock"], "loaded once, by the restock")
	}
}
