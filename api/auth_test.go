package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

var jwtSecret = []byte("test-jwt-secret")

// parseToken checks raw the way docs/API.md requires: HS256 only, aud
// "seckill", exp present and in the future.
func parseToken(t *testing.T, raw string, secret []byte) (*api.Claims, error) {
	t.Helper()
	var c api.Claims
	_, err := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(api.Audience),
		jwt.WithExpirationRequired(),
	).ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return secret, nil })
	return &c, err
}

func TestSignToken_ProducesVerifiableToken(t *testing.T) {
	tests := []struct {
		name  string
		user  string
		admin bool
		role  string
	}{
		{"user", "u1", false, ""},
		{"admin", "ops_team-1", true, api.RoleAdmin},
		{"64 characters", strings.Repeat("a", 64), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().Truncate(time.Second)

			raw, err := api.SignToken(jwtSecret, tt.user, tt.admin, time.Hour)
			require.NoError(t, err)

			c, err := parseToken(t, raw, jwtSecret)
			require.NoError(t, err)
			require.Equal(t, tt.user, c.Subject)
			require.Equal(t, jwt.ClaimStrings{api.Audience}, c.Audience)
			require.Equal(t, tt.role, c.Role)
			require.NotNil(t, c.ExpiresAt)
			require.WithinDuration(t, before.Add(time.Hour), c.ExpiresAt.Time, 2*time.Second)
		})
	}
}

func TestSignToken_OtherSecretDoesNotVerify(t *testing.T) {
	raw, err := api.SignToken(jwtSecret, "u1", false, time.Hour)
	require.NoError(t, err)

	_, err = parseToken(t, raw, []byte("another-secret"))

	require.ErrorIs(t, err, jwt.ErrSignatureInvalid)
}

func TestSignToken_UsesHS256(t *testing.T) {
	raw, err := api.SignToken(jwtSecret, "u1", false, time.Hour)
	require.NoError(t, err)

	tok, _, err := jwt.NewParser().ParseUnverified(raw, &api.Claims{})

	require.NoError(t, err)
	require.Equal(t, "HS256", tok.Header["alg"])
}

func TestSignToken_RejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		user string
		ttl  time.Duration
	}{
		{"empty user", "", time.Hour},
		{"65 characters", strings.Repeat("a", 65), time.Hour},
		{"space", "u 1", time.Hour},
		{"dot", "u.1", time.Hour},
		{"slash", "u/1", time.Hour},
		{"non-ascii", "ü1", time.Hour},
		{"newline", "u1\n", time.Hour},
		{"zero ttl", "u1", 0},
		{"negative ttl", "u1", -time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := api.SignToken(jwtSecret, tt.user, false, tt.ttl)

			require.Error(t, err)
			require.Empty(t, raw)
		})
	}
}

func TestParseEvent_ReadsHandledEvents(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		expected seckill.PaymentEvent
		orderID  int64
	}{
		{
			name: "succeeded",
			body: `{"id": "evt_1", "type": "payment_intent.succeeded", "created": 1763800000,
				"data": {"object": {"id": "pi_1", "object": "payment_intent", "amount": 990,
				"currency": "usd", "metadata": {"order_id": "123"}}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_1", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_1", AmountCents: 990, Currency: "usd"},
			orderID:  123,
		},
		{
			name: "failed",
			body: `{"id": "evt_2", "type": "payment_intent.payment_failed",
				"data": {"object": {"id": "pi_2", "amount": 990, "currency": "usd", "metadata": {"order_id": "7205759403792793600"}}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_2", Type: seckill.PaymentFailed, PaymentIntentID: "pi_2", AmountCents: 990, Currency: "usd"},
			orderID:  7205759403792793600,
		},
		{
			name: "currency lower-cased",
			body: `{"id": "evt_3", "type": "payment_intent.succeeded",
				"data": {"object": {"id": "pi_3", "amount": 100, "currency": "EUR", "metadata": {"order_id": "5"}}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_3", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_3", AmountCents: 100, Currency: "eur"},
			orderID:  5,
		},
		{
			name: "order id not numeric",
			body: `{"id": "evt_4", "type": "payment_intent.succeeded",
				"data": {"object": {"id": "pi_4", "amount": 990, "currency": "usd", "metadata": {"order_id": "abc"}}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_4", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_4", AmountCents: 990, Currency: "usd"},
		},
		{
			name: "order id negative",
			body: `{"id": "evt_5", "type": "payment_intent.succeeded",
				"data": {"object": {"id": "pi_5", "amount": 990, "currency": "usd", "metadata": {"order_id": "-5"}}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_5", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_5", AmountCents: 990, Currency: "usd"},
		},
		{
			name: "no metadata",
			body: `{"id": "evt_6", "type": "payment_intent.succeeded",
				"data": {"object": {"id": "pi_6", "amount": 990, "currency": "usd"}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_6", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_6", AmountCents: 990, Currency: "usd"},
		},
		{
			name:     "unknown type",
			body:     `{"id": "evt_7", "type": "customer.created", "data": {"object": {"id": "cus_1", "metadata": {"order_id": "123"}}}}`,
			expected: seckill.PaymentEvent{EventID: "evt_7", Type: "customer.created"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, orderID, err := api.ParseEvent([]byte(tt.body))

			require.NoError(t, err)
			require.Equal(t, tt.expected, ev)
			require.Equal(t, tt.orderID, orderID)
		})
	}
}

func TestParseEvent_RejectsNonEvents(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"not json", `not json`},
		{"empty", ``},
		{"json array", `[]`},
		{"no data", `{"id": "evt_1", "type": "payment_intent.succeeded"}`},
		{"no data.object", `{"id": "evt_1", "type": "payment_intent.succeeded", "data": {}}`},
		{"no id", `{"type": "payment_intent.succeeded", "data": {"object": {"id": "pi_1"}}}`},
		{"no type", `{"id": "evt_1", "data": {"object": {"id": "pi_1"}}}`},
		{"id too long", `{"id": "` + strings.Repeat("e", 256) + `", "type": "payment_intent.succeeded", "data": {"object": {"id": "pi_1"}}}`},
		{"null data.object", `{"id": "evt_1", "type": "payment_intent.succeeded", "data": {"object": null}}`},
		{"data.object a string", `{"id": "evt_1", "type": "charge.refunded", "data": {"object": "ch_1"}}`},
		{"object not a payment intent", `{"id": "evt_1", "type": "payment_intent.succeeded", "data": {"object": {"amount": "990"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := api.ParseEvent([]byte(tt.body))

			require.Error(t, err)
		})
	}
}

func TestEventBody_ParsesBackToTheSameEvent(t *testing.T) {
	for _, ev := range []seckill.PaymentEvent{
		{EventID: "evt_1", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_1", AmountCents: 990, Currency: "usd"},
		{EventID: "evt_2", Type: seckill.PaymentFailed, PaymentIntentID: "pi_2", AmountCents: 0, Currency: "eur"},
	} {
		got, orderID, err := api.ParseEvent(api.EventBody(ev, 42, time.Unix(1763800000, 0)))
		if err != nil || got != ev || orderID != 42 {
			t.Errorf("EventBody(%+v) parses to %+v, order %d, %v", ev, got, orderID, err)
		}
	}
}
