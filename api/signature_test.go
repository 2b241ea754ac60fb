package api_test

import (
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/seckill/seckill/api"
)

const webhookSecret = "whsec_test_secret"

var eventBody = []byte(`{"id": "evt_1", "object": "event", "type": "payment_intent.succeeded", "created": 1763800000,
 "data": {"object": {"id": "pi_1", "object": "payment_intent", "amount": 990,
   "currency": "usd", "metadata": {"order_id": "123"}}}}`)

// stripeSigned is the Stripe-Signature header the official SDK's test
// helper produces for body at ts.
func stripeSigned(body []byte, secret string, ts time.Time) *webhook.SignedPayload {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
}

func TestVerifySignature_AcceptsStripeSDKSignature(t *testing.T) {
	now := time.Now()
	signed := stripeSigned(eventBody, webhookSecret, now)

	err := api.VerifySignature(signed.Header, eventBody, []byte(webhookSecret), now)

	require.NoError(t, err)
}

func TestVerifySignature_AcceptsOnlyAFreshSignatureOfTheBodyUnderTheSecret(t *testing.T) {
	now := time.Unix(1763800000, 0)
	secret := []byte(webhookSecret)
	header := func(ts time.Time) string { return stripeSigned(eventBody, webhookSecret, ts).Header }
	sig := func(ts time.Time) string {
		return hex.EncodeToString(stripeSigned(eventBody, webhookSecret, ts).Signature)
	}
	unix := func(ts time.Time) string { return strconv.FormatInt(ts.Unix(), 10) }
	wrong := hex.EncodeToString(stripeSigned(eventBody, "whsec_other", now).Signature)

	tests := []struct {
		name     string
		header   string
		body     []byte
		expected error // nil: accepted
	}{
		{"stripe sdk signature", header(now), eventBody, nil},
		{"299 s old", header(now.Add(-299 * time.Second)), eventBody, nil},
		{"299 s in the future", header(now.Add(299 * time.Second)), eventBody, nil},
		{"300 s old", header(now.Add(-300 * time.Second)), eventBody, nil},
		{"301 s old", header(now.Add(-301 * time.Second)), eventBody, api.ErrSignatureStale},
		{"301 s in the future", header(now.Add(301 * time.Second)), eventBody, api.ErrSignatureStale},
		{"missing header", "", eventBody, api.ErrSignatureHeader},
		{"no t", "v1=" + sig(now), eventBody, api.ErrSignatureHeader},
		{"t not a number", "t=abc,v1=" + sig(now), eventBody, api.ErrSignatureHeader},
		{"two t", "t=" + unix(now) + ",t=" + unix(now) + ",v1=" + sig(now), eventBody, api.ErrSignatureHeader},
		{"no v1", "t=" + unix(now), eventBody, api.ErrSignatureHeader},
		{"only v0", stripeSignedScheme(now, "v0"), eventBody, api.ErrSignatureHeader},
		{"part without =", "t=" + unix(now) + ",v1", eventBody, api.ErrSignatureHeader},
		{"bad hex", "t=" + unix(now) + ",v1=zz" + sig(now)[2:], eventBody, api.ErrSignatureHeader},
		{"short v1", "t=" + unix(now) + ",v1=" + sig(now)[:32], eventBody, api.ErrSignatureHeader},
		{"wrong secret", "t=" + unix(now) + ",v1=" + wrong, eventBody, api.ErrSignatureNoMatch},
		{"tampered body", header(now), []byte(string(eventBody) + " "), api.ErrSignatureNoMatch},
		{"empty body", header(now), nil, api.ErrSignatureNoMatch},
		{"several v1, last matches", "t=" + unix(now) + ",v1=" + wrong + ",v1=" + sig(now), eventBody, nil},
		{"several v1, first matches", "t=" + unix(now) + ",v1=" + sig(now) + ",v1=" + wrong, eventBody, nil},
		{"bad v1 beside a good one", "t=" + unix(now) + ",v1=zz,v1=" + sig(now), eventBody, nil},
		{"unknown schemes ignored", "t=" + unix(now) + ",v1=" + sig(now) + ",v0=" + wrong, eventBody, nil},
		{"replayed signature with new t", "t=" + unix(now) + ",v1=" + sig(now.Add(-time.Hour)), eventBody, api.ErrSignatureNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := api.VerifySignature(tt.header, tt.body, secret, now)

			if tt.expected == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.expected)
		})
	}
}

func stripeSignedScheme(ts time.Time, scheme string) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: eventBody, Secret: webhookSecret, Timestamp: ts, Scheme: scheme,
	}).Header
}

func TestSign_RoundTrips(t *testing.T) {
	now := time.Now()

	header := api.Sign(eventBody, []byte(webhookSecret), now)

	require.NoError(t, api.VerifySignature(header, eventBody, []byte(webhookSecret), now))
	require.ErrorIs(t, api.VerifySignature(header, eventBody, []byte("whsec_other"), now), api.ErrSignatureNoMatch)
}

func TestSign_MatchesStripeSDKHeader(t *testing.T) {
	ts := time.Unix(1763800000, 0)

	header := api.Sign(eventBody, []byte(webhookSecret), ts)

	require.Equal(t, stripeSigned(eventBody, webhookSecret, ts).Header, header)
}

func TestSign_AcceptedByStripeSDK(t *testing.T) {
	header := api.Sign(eventBody, []byte(webhookSecret), time.Now())

	ev, err := webhook.ConstructEventWithOptions(eventBody, header, webhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})

	require.NoError(t, err)
	require.Equal(t, "evt_1", ev.ID)
	require.Equal(t, "payment_intent.succeeded", string(ev.Type))
	require.Equal(t, map[string]any{"order_id": "123"}, ev.Data.Object["metadata"])
}

func TestSign_StaleRejectedByStripeSDK(t *testing.T) {
	header := api.Sign(eventBody, []byte(webhookSecret), time.Now().Add(-301*time.Second))

	_, err := webhook.ConstructEventWithOptions(eventBody, header, webhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})

	require.ErrorIs(t, err, webhook.ErrTooOld)
}
