package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

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
