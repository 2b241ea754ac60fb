//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// TestAPI_ContractAndHostileInput checks the documented answers of docs/API.md
// for bad, hostile and edge-case requests, and that none of them writes.
func TestAPI_ContractAndHostileInput(t *testing.T) {
	s := startSystem(t, systemOptions{})
	secret := s.cfg.JWTSecret
	now := time.Now().UTC()
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
		require.NoError(t, err)
		return tok
	}
	valid := jwt.MapClaims{"sub": "mallory", "aud": "seckill", "exp": now.Add(time.Hour).Unix(), "role": "admin"}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for key, val := range valid {
			c[key] = val
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	none := sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid)
	saleBody := func(fields map[string]any) []byte {
		m := map[string]any{"name": "x", "price_cents": 100, "stock": 10,
			"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339)}
		for k, v := range fields {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		b, _ := json.Marshal(m)
		return b
	}

	t.Run("tokens", func(t *testing.T) {
		for name, tc := range map[string]struct {
			token string
			want  int
			code  string
		}{
			"missing":        {"", 401, "UNAUTHENTICATED"},
			"garbage":        {"not-a-jwt", 401, "UNAUTHENTICATED"},
			"alg none":       {none, 401, "UNAUTHENTICATED"},
			"HS512":          {sign(jwt.SigningMethodHS512, secret, valid), 401, "UNAUTHENTICATED"},
			"wrong key":      {sign(jwt.SigningMethodHS256, []byte("forged"), valid), 401, "UNAUTHENTICATED"},
			"expired":        {sign(jwt.SigningMethodHS256, secret, with("exp", now.Add(-time.Minute).Unix())), 401, "UNAUTHENTICATED"},
			"no exp":         {sign(jwt.SigningMethodHS256, secret, with("exp", nil)), 401, "UNAUTHENTICATED"},
			"wrong audience": {sign(jwt.SigningMethodHS256, secret, with("aud", "other")), 401, "UNAUTHENTICATED"},
			"control in sub": {sign(jwt.SigningMethodHS256, secret, with("sub", "bob\n")), 401, "UNAUTHENTICATED"},
			"non-ASCII sub":  {sign(jwt.SigningMethodHS256, secret, with("sub", "élise")), 401, "UNAUTHENTICATED"},
			"empty sub":      {sign(jwt.SigningMethodHS256, secret, with("sub", "")), 401, "UNAUTHENTICATED"},
			"long sub":       {sign(jwt.SigningMethodHS256, secret, with("sub", strings.Repeat("a", 256))), 401, "UNAUTHENTICATED"},
			"not admin":      {sign(jwt.SigningMethodHS256, secret, with("role", nil)), 403, "FORBIDDEN"},
			"role user":      {sign(jwt.SigningMethodHS256, secret, with("role", "user")), 403, "FORBIDDEN"},
		} {
			t.Run(name, func(t *testing.T) {
				r := s.mustDo("POST", "/api/v1/sales", tc.token, saleBody(nil))
				require.Equal(t, tc.want, r.status, "%s", r.body)
				require.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
				require.Equal(t, tc.code, r.json(t)["code"])
			})
		}
		r := s.mustDo("POST", "/api/v1/sales", "", saleBody(nil))
		require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
	})

	t.Run("sale validation", func(t *testing.T) {
		admin := s.token("admin", true)
		for name, tc := range map[string]struct {
			body  []byte
			want  int
			code  string
			field string
		}{
			"malformed JSON":     {[]byte(`{"name":`), 400, "INVALID_REQUEST", ""},
			"empty body":         {nil, 400, "INVALID_REQUEST", ""},
			"negative stock":     {saleBody(map[string]any{"stock": -1}), 400, "INVALID_REQUEST", "stock"},
			"zero stock":         {saleBody(map[string]any{"stock": 0}), 400, "INVALID_REQUEST", "stock"},
			"too much stock":     {saleBody(map[string]any{"stock": 10_000_001}), 400, "INVALID_REQUEST", "stock"},
			"20-digit stock":     {[]byte(`{"name":"x","price_cents":1,"stock":99999999999999999999,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2027-01-01T00:00:00Z"}`), 400, "INVALID_REQUEST", "stock"},
			"stock as string":    {saleBody(map[string]any{"stock": "10"}), 400, "INVALID_REQUEST", "stock"},
			"ends before starts": {saleBody(map[string]any{"ends_at": now.Add(-time.Hour).Format(time.RFC3339)}), 400, "INVALID_REQUEST", "ends_at"},
			"timeout too short":  {saleBody(map[string]any{"payment_timeout_seconds": 4}), 400, "INVALID_REQUEST", "payment_timeout_seconds"},
			"timeout too long":   {saleBody(map[string]any{"payment_timeout_seconds": 86401}), 400, "INVALID_REQUEST", "payment_timeout_seconds"},
			"no segments":        {saleBody(map[string]any{"stock_segments": 0}), 400, "INVALID_REQUEST", "stock_segments"},
			"65 segments":        {saleBody(map[string]any{"stock_segments": 65}), 400, "INVALID_REQUEST", "stock_segments"},
			"bad currency":       {saleBody(map[string]any{"currency": "dollars"}), 400, "INVALID_REQUEST", "currency"},
			"negative price":     {saleBody(map[string]any{"price_cents": -5}), 400, "INVALID_REQUEST", "price_cents"},
			"missing name":       {saleBody(map[string]any{"name": nil}), 400, "INVALID_REQUEST", "name"},
			"blank name":         {saleBody(map[string]any{"name": "   "}), 400, "INVALID_REQUEST", "name"},
			"missing starts_at":  {saleBody(map[string]any{"starts_at": nil}), 400, "INVALID_REQUEST", "starts_at"},
			"not RFC 3339":       {saleBody(map[string]any{"starts_at": "2026-11-22 10:00"}), 400, "INVALID_REQUEST", "starts_at: must be an RFC 3339 time"},
			"ends_at not a time": {saleBody(map[string]any{"ends_at": "tomorrow"}), 400, "INVALID_REQUEST", "ends_at: must be an RFC 3339 time"},
			"price as string":    {saleBody(map[string]any{"price_cents": "9.90"}), 400, "INVALID_REQUEST", "price_cents: must be a whole number"},
			"price with cents":   {saleBody(map[string]any{"price_cents": 9.90}), 400, "INVALID_REQUEST", "price_cents: must be a whole number"},
			"entirely past":      {saleBody(map[string]any{"starts_at": now.Add(-2 * time.Hour).Format(time.RFC3339), "ends_at": now.Add(-time.Hour).Format(time.RFC3339)}), 400, "INVALID_REQUEST", "ends_at: is in the past"},
			"two objects":        {[]byte(`{"name":"x"} {"name":"y"}`), 400, "INVALID_REQUEST", ""},
		} {
			t.Run(name, func(t *testing.T) {
				r, err := s.do("POST", "/api/v1/sales", admin, tc.body, nil)
				require.NoError(t, err)
				require.Equal(t, tc.want, r.status, "%s", r.body)
				p := r.json(t)
				require.Equal(t, tc.code, p["code"])
				require.EqualValues(t, tc.want, p["status"])
				require.Contains(t, p["detail"], tc.field)
			})
		}
		// A 10 MB body is refused from its Content-Length, before it is read.
		status, body := rawPost(t, s.info.APIURL, "/api/v1/sales", admin, 10<<20)
		require.Equal(t, 413, status, "%s", body)
		require.Contains(t, body, `"code":"BODY_TOO_LARGE"`)

		// None of it created a sale.
		r := s.mustDo("GET", "/api/v1/sales", "", nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Empty(t, r.json(t)["sales"])
	})

	t.Run("unknown ids", func(t *testing.T) {
		user := s.token("someone", false)
		for _, id := range []string{"999999", "abc", "99999999999999999999", "-1", "0", "1%27%20OR%201=1", "%E2%9C%93"} {
			r := s.mustDo("GET", "/api/v1/sales/"+id, "", nil)
			require.Equal(t, 404, r.status, "sale %s", id)
			require.Equal(t, "SALE_NOT_FOUND", r.json(t)["code"])
			r = s.mustDo("POST", "/api/v1/sales/"+id+"/claims", user, nil)
			require.Equal(t, 404, r.status, "claim %s", id)
			require.Equal(t, "SALE_NOT_FOUND", r.json(t)["code"])
			r = s.mustDo("GET", "/api/v1/orders/"+id, user, nil)
			require.Equal(t, 404, r.status, "order %s", id)
			require.Equal(t, "ORDER_NOT_FOUND", r.json(t)["code"])
		}
	})

	t.Run("sale window and sold out", func(t *testing.T) {
		admin := s.token("admin", true)
		mk := func(starts, ends time.Time, stock int) string {
			r := s.mustDo("POST", "/api/v1/sales", admin, saleBody(map[string]any{
				"starts_at": starts.Format(time.RFC3339), "ends_at": ends.Format(time.RFC3339), "stock": stock}))
			require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
			return r.json(t)["id"].(string)
		}
		future := mk(now.Add(time.Hour), now.Add(2*time.Hour), 5)
		require.Equal(t, "SCHEDULED", s.mustDo("GET", "/api/v1/sales/"+future, "", nil).json(t)["state"])
		r := s.claim(future, "early")
		require.Equal(t, 409, r.status)
		require.Equal(t, "SALE_NOT_STARTED", r.json(t)["code"])

		// A sale entirely in the past is refused (400, above): this one ends
		// a moment after it is made.
		past := mk(now.Add(-2*time.Hour), time.Now().Add(2*time.Second), 5)
		require.Eventually(t, func() bool {
			return s.mustDo("GET", "/api/v1/sales/"+past, "", nil).json(t)["state"] == "ENDED"
		}, 10*time.Second, 100*time.Millisecond)
		r = s.claim(past, "late")
		require.Equal(t, 409, r.status)
		require.Equal(t, "SALE_ENDED", r.json(t)["code"])

		one := mk(now.Add(-time.Minute), now.Add(time.Hour), 1)
		require.Equal(t, 202, s.claim(one, "first").status)
		r = s.claim(one, "second")
		require.Equal(t, 409, r.status)
		require.Equal(t, "SOLD_OUT", r.json(t)["code"])
		require.Equal(t, "SOLD_OUT", s.mustDo("GET", "/api/v1/sales/"+one, "", nil).json(t)["state"])
	})

	t.Run("webhook", func(t *testing.T) {
		event := []byte(`{"id":"evt_h1","type":"payment_intent.succeeded","created":1,"data":{"object":{"id":"pi_1","amount":990,"currency":"usd","metadata":{"order_id":"42"}}}}`)
		old := now.Add(-301 * time.Second)
		for name, tc := range map[string]struct {
			body   []byte
			header string
			want   int
			code   string
		}{
			"no signature":    {event, "", 400, "INVALID_SIGNATURE"},
			"wrong secret":    {event, api.Sign(event, []byte("whsec_other"), now), 400, "INVALID_SIGNATURE"},
			"signed 301s ago": {event, api.Sign(event, s.cfg.WebhookSecret, old), 400, "INVALID_SIGNATURE"},
			"replayed with a new timestamp": {event, fmt.Sprintf("t=%d,%s", now.Unix(),
				strings.SplitN(api.Sign(event, s.cfg.WebhookSecret, old), ",", 2)[1]), 400, "INVALID_SIGNATURE"},
			"tampered body":  {append([]byte(nil), event[:len(event)-1]...), api.Sign(event, s.cfg.WebhookSecret, now), 400, "INVALID_SIGNATURE"},
			"not JSON":       {[]byte("hello"), api.Sign([]byte("hello"), s.cfg.WebhookSecret, now), 400, "MALFORMED_EVENT"},
			"no data.object": {[]byte(`{"id":"evt_x","type":"payment_intent.succeeded"}`), api.Sign([]byte(`{"id":"evt_x","type":"payment_intent.succeeded"}`), s.cfg.WebhookSecret, now), 400, "MALFORMED_EVENT"},
		} {
			t.Run(name, func(t *testing.T) {
				r, err := s.do("POST", "/api/v1/payments/webhook", "", tc.body, map[string]string{"Stripe-Signature": tc.header})
				require.NoError(t, err)
				require.Equal(t, tc.want, r.status, "%s", r.body)
				require.Equal(t, tc.code, r.json(t)["code"])
			})
		}
		db, err := s.store.SQLDB()
		require.NoError(t, err)
		var n int
		require.NoError(t, db.QueryRowContext(context.Background(), "SELECT count(*) FROM payment_events").Scan(&n))
		require.Zero(t, n, "a rejected webhook recorded an event")

		// Other types are recorded and ignored; unknown orders are kept.
		other := []byte(`{"id":"evt_other","type":"charge.refunded","data":{"object":{"id":"ch_1"}}}`)
		r, err := s.do("POST", "/api/v1/payments/webhook", "", other, map[string]string{"Stripe-Signature": api.Sign(other, s.cfg.WebhookSecret, now)})
		require.NoError(t, err)
		require.Equal(t, 200, r.status, "%s", r.body)
		require.Equal(t, "IGNORED", r.json(t)["outcome"])
		r = s.webhook("evt_nobody", seckill.PaymentSucceeded, "12345", 990)
		require.Equal(t, 200, r.status, "%s", r.body)
		require.Equal(t, "UNKNOWN_ORDER", r.json(t)["outcome"])
	})

	t.Run("orders are private and cancellable by their owner", func(t *testing.T) {
		sale := s.createSale(5, 600*time.Second)
		r := s.claim(sale, "owner")
		require.Equal(t, 202, r.status, "%s", r.body)
		id := r.json(t)["order_id"].(string)
		s.waitOrder(id, "owner", seckill.StatusAwaitingPayment, 20*time.Second)
		r = s.mustDo("GET", "/api/v1/orders/"+id, s.token("stranger", false), nil)
		require.Equal(t, 404, r.status)
		require.Equal(t, "ORDER_NOT_FOUND", r.json(t)["code"])
		r = s.mustDo("GET", "/api/v1/orders/"+id, s.token("ops", true), nil)
		require.Equal(t, 200, r.status)
		r = s.mustDo("POST", "/api/v1/orders/"+id+"/cancel", s.token("stranger", false), nil)
		require.Equal(t, 404, r.status)

		r = s.mustDo("POST", "/api/v1/orders/"+id+"/cancel", s.token("owner", false), nil)
		require.Equal(t, 202, r.status, "%s", r.body)
		o := s.waitOrder(id, "owner", seckill.StatusClosed, 20*time.Second)
		require.Equal(t, seckill.CloseCancelled, *o.CloseReason)
		require.Eventually(t, func() bool { return s.stock(sale).Remaining == 5 }, 10*time.Second, 50*time.Millisecond)
		s.requireSplit(sale, 5, 5, 0, 0)
		r = s.mustDo("POST", "/api/v1/orders/"+id+"/cancel", s.token("owner", false), nil)
		require.Equal(t, 409, r.status)
		require.Equal(t, "ORDER_NOT_CANCELLABLE", r.json(t)["code"])
	})

	t.Run("operations", func(t *testing.T) {
		require.Equal(t, 200, s.mustDo("GET", "/healthz", "", nil).status)
		r := s.mustDo("GET", "/readyz", "", nil)
		require.Equal(t, 200, r.status, "%s", r.body)
		r = s.mustDo("GET", "/metrics", "", nil)
		require.Equal(t, 200, r.status)
		require.Contains(t, string(r.body), "seckill_claims_total")
		r = s.mustDo("GET", "/nope", "", nil)
		require.Equal(t, 404, r.status)
		require.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
	})
}
