package api_test

// Native fuzz targets (go test -fuzz) for the parsers that face untrusted
// input: the webhook signature and body, bearer tokens and idempotency keys.
// Each target checks its input against an oracle written here from docs/API.md,
// not only that the code does not panic. Without -fuzz, `go test` runs the
// seed corpora (the f.Add calls and api/testdata/fuzz/<Target>/) as tests.
//
// Run one target at a time, for example:
//
//	go test ./api -run '^$' -fuzz '^FuzzVerifySignature$' -fuzztime 20s

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// ---------------------------------------------------------------------------
// Webhook signature

var fuzzWebhookSecret = []byte("whsec_fuzz_secret")

// fuzzNow is the fixed "now" of FuzzVerifySignature, so a failing input
// replays the same way on any day.
const fuzzNow int64 = 1763800000

const toleranceSeconds = 300

// refMAC is hex HMAC-SHA256(secret, "<t>.<body>") computed without the api
// package.
func refMAC(secret []byte, t string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(t))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// sigHeader is a Stripe-Signature header as the oracle reads it.
type sigHeader struct {
	wellFormed bool     // every part is k=v and there is exactly one t, an integer
	ts         int64    // the t, when wellFormed
	v1         []string // every v1 value, as written
}

func parseSigHeader(header string) sigHeader {
	h := sigHeader{wellFormed: true}
	tCount := 0
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			h.wellFormed = false
			continue
		}
		switch k {
		case "t":
			tCount++
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				h.wellFormed = false
			}
			h.ts = n
		case "v1":
			h.v1 = append(h.v1, v)
		}
	}
	if tCount != 1 {
		h.wellFormed = false
	}
	return h
}

// within reports whether |now-ts| <= 300 s, without overflow.
func within(now, ts int64) bool {
	return ts >= now-toleranceSeconds && ts <= now+toleranceSeconds
}

// hasMatchingV1 reports whether some v1 of h is the signature of body at
// h.ts. The signed timestamp is the decimal form of the header's t (what
// Stripe's SDKs sign and check: they parse t as an integer and format it
// back), so "t=+1763800000" or "t=01763800000" carry the signature of
// "1763800000.<body>".
func (h sigHeader) hasMatchingV1(secret, body []byte) bool {
	want := refMAC(secret, strconv.FormatInt(h.ts, 10), body)
	for _, v := range h.v1 {
		got, err := hex.DecodeString(v)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

func FuzzVerifySignature(f *testing.F) {
	now := time.Unix(fuzzNow, 0)
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":990,"currency":"usd","metadata":{"order_id":"123"}}}}`)
	valid := api.Sign(body, fuzzWebhookSecret, now)
	mac := hex.EncodeToString(refMAC(fuzzWebhookSecret, strconv.FormatInt(fuzzNow, 10), body))
	ts := strconv.FormatInt(fuzzNow, 10)
	seeds := []struct {
		header string
		body   []byte
		off    int64
	}{
		{valid, body, 0},
		{valid, body, 300},
		{valid, body, -300},
		{valid, body, 301},
		{valid, body, math.MaxInt64},
		{valid, body, math.MinInt64},
		{valid, []byte{}, 7},
		{"t=" + ts + ",v1=" + mac, body, 1},
		{"t=" + ts + ",v1=" + strings.ToUpper(mac), body, 2},
		{"t=" + ts + ", v1=" + mac + " ", body, 3},
		{"v1=" + mac + ",t=" + ts, body, 4},
		{"t=" + ts + ",v0=" + mac + ",v1=" + strings.Repeat("0", 64) + ",v1=" + mac, body, 5},
		{"t=" + ts + ",v1=" + mac + ",v1=" + strings.Repeat("ab", 32), body, 6},
		{"t=" + ts + ",v1=" + mac + ",t=" + ts, body, 6},
		{"t=" + ts + ",v1=" + mac[:62], body, 8},
		{"t=" + ts + ",v1=" + mac + "00", body, 9},
		{"t=+" + ts + ",v1=" + mac, body, 10},
		{"t=0" + ts + ",v1=" + mac, body, 11},
		{"t=" + strconv.FormatInt(fuzzNow-301, 10) + ",v1=" + mac, body, 12},
		{"t=" + strconv.FormatInt(fuzzNow+300, 10) + ",v1=" + mac, body, 13},
		{"t=9223372036854775807,v1=" + mac, body, 14},
		{"t=-9223372036854775808,v1=" + mac, body, 15},
		{"t=" + ts, body, 16},
		{"v1=" + mac, body, 17},
		{"t=" + ts + ",v1=" + mac + ",", body, 18},
		{"t=,v1=", nil, 19},
		{"", nil, 20},
		{",", []byte("x"), 21},
		{"t=" + ts + ",v1=" + mac + ",garbage", body, 22},
		{"t=" + ts + ";v1=" + mac, body, 23},
	}
	for _, s := range seeds {
		f.Add(s.header, s.body, s.off)
	}

	f.Fuzz(func(t *testing.T, header string, body []byte, tsOffset int64) {
		secret := fuzzWebhookSecret

		// 1. Arbitrary headers: accepted only with a genuine, fresh signature.
		err := api.VerifySignature(header, body, secret, now)
		h := parseSigHeader(header)
		switch {
		case err == nil:
			if !h.wellFormed {
				t.Fatalf("accepted a malformed header %q", header)
			}
			if !within(fuzzNow, h.ts) {
				t.Fatalf("accepted t=%d, %d s away from now", h.ts, fuzzNow-h.ts)
			}
			if !h.hasMatchingV1(secret, body) {
				t.Fatalf("accepted header %q without a v1 matching HMAC(secret, t.body)", header)
			}
		case !errors.Is(err, api.ErrSignatureHeader) && !errors.Is(err, api.ErrSignatureStale) &&
			!errors.Is(err, api.ErrSignatureNoMatch):
			t.Fatalf("unexpected error %v", err)
		case errors.Is(err, api.ErrSignatureStale) && h.wellFormed && within(fuzzNow, h.ts):
			t.Fatalf("t=%d is within the tolerance but was called stale", h.ts)
		case errors.Is(err, api.ErrSignatureNoMatch) && h.wellFormed && h.hasMatchingV1(secret, body):
			t.Fatalf("header %q has a matching v1 but was refused", header)
		case h.wellFormed && within(fuzzNow, h.ts) && h.hasMatchingV1(secret, body):
			// A correct, fresh signature (Stripe sends extra v1 and v0
			// entries, spaces are tolerated) must verify.
			t.Fatalf("valid header %q refused: %v", header, err)
		}

		// 2. Headers from Sign at now+offset verify iff |offset| <= 300 s,
		// and only for the signed body.
		in := tsOffset % (toleranceSeconds + 1) // -300..300
		signed := api.Sign(body, secret, now.Add(time.Duration(in)*time.Second))
		if err := api.VerifySignature(signed, body, secret, now); err != nil {
			t.Fatalf("Sign at now%+ds does not verify: %v (header %q)", in, err, signed)
		}
		if sh := parseSigHeader(signed); !sh.wellFormed || sh.ts != fuzzNow+in || !sh.hasMatchingV1(secret, body) {
			t.Fatalf("Sign produced %q, not t=%d with the HMAC of the body", signed, fuzzNow+in)
		}
		// A now with a fractional second: headers carry whole seconds, so
		// only |offset| <= 299 s is certain to be within 300 s.
		if in > -toleranceSeconds {
			fracNow := now.Add(999999999 * time.Nanosecond)
			s := api.Sign(body, secret, fracNow.Add(time.Duration(in)*time.Second))
			if err := api.VerifySignature(s, body, secret, fracNow); err != nil {
				t.Fatalf("Sign at now+0.999999999s%+ds does not verify: %v", in, err)
			}
		}
		if at, ok := addInt64(fuzzNow, tsOffset); ok && !within(fuzzNow, at) {
			s := api.Sign(body, secret, time.Unix(at, 0))
			if err := api.VerifySignature(s, body, secret, now); !errors.Is(err, api.ErrSignatureStale) {
				t.Fatalf("Sign at now%+ds: got %v, want ErrSignatureStale", tsOffset, err)
			}
		}
		if err := api.VerifySignature(signed, body, []byte("another secret"), now); err == nil {
			t.Fatal("verified with another secret")
		}
		if len(body) == 0 {
			return
		}
		// Any one byte changed, in every position (or 256 spread over a
		// long body): never verifies.
		flip := byte(uint64(tsOffset)>>8) | 1 // non-zero
		step := 1
		if len(body) > 256 {
			step = len(body) / 256
		}
		changed := bytes.Clone(body)
		for i := 0; i < len(body); i += step {
			changed[i] ^= flip
			if err := api.VerifySignature(signed, changed, secret, now); err == nil {
				t.Fatalf("verified with byte %d of the body changed", i)
			}
			changed[i] = body[i]
		}
		if err := api.VerifySignature(signed, body[:len(body)-1], secret, now); err == nil {
			t.Fatal("verified with the body truncated")
		}
		if err := api.VerifySignature(signed, append(bytes.Clone(body), ' '), secret, now); err == nil {
			t.Fatal("verified with a byte appended to the body")
		}
	})
}

func addInt64(a, b int64) (int64, bool) {
	c := a + b
	if (b > 0 && c < a) || (b < 0 && c > a) {
		return 0, false
	}
	return c, true
}

// ---------------------------------------------------------------------------
// Webhook body

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"id": "evt_1", "object": "event", "type": "payment_intent.succeeded", "created": 1763800000,
 "data": {"object": {"id": "pi_1", "object": "payment_intent", "amount": 990,
   "currency": "usd", "metadata": {"order_id": "123"}}}}`,
		`{"id":"evt_2","type":"payment_intent.payment_failed","data":{"object":{"id":"pi_2","amount":990,"currency":"USD","metadata":{"order_id":"9223372036854775807"}}}}`,
		`{"id":"evt_3","type":"payment_intent.succeeded","data":{"object":{"id":"pi_3","amount":-1,"currency":"EuR"}}}`,
		`{"id":"evt_4","type":"payment_intent.succeeded","data":{"object":{"metadata":{"order_id":"abc"}}}}`,
		`{"id":"evt_5","type":"payment_intent.succeeded","data":{"object":{"metadata":{"order_id":"-5"}}}}`,
		`{"id":"evt_6","type":"payment_intent.succeeded","data":{"object":{"metadata":{"order_id":"0"}}}}`,
		`{"id":"evt_7","type":"payment_intent.succeeded","data":{"object":{"metadata":{"order_id":"+7"}}}}`,
		`{"id":"evt_8","type":"payment_intent.succeeded","data":{"object":{"metadata":{"order_id":"99999999999999999999"}}}}`,
		`{"id":"evt_9","type":"payment_intent.succeeded","data":{"object":{"currency":"\u0130STANBUL","amount":1e3}}}`,
		`{"id":"evt_10","type":"charge.refunded","data":{"object":{"id":"ch_1"}}}`,
		`{"id":"evt_11","type":"payment_intent.succeeded","data":{"object":[]}}`,
		`{"id":"evt_12","type":"payment_intent.succeeded","data":{"object":null}}`,
		`{"id":"evt_13","type":"payment_intent.succeeded","data":{"object":"x"}}`,
		`{"id":"evt_14","type":"payment_intent.succeeded","data":null}`,
		`{"id":"evt_15","type":"payment_intent.succeeded"}`,
		`{"id":"","type":"payment_intent.succeeded","data":{"object":{}}}`,
		`{"id":"evt_16","type":"","data":{"object":{}}}`,
		`{"id":"` + strings.Repeat("e", 255) + `","type":"x","data":{"object":{}}}`,
		`{"id":"` + strings.Repeat("e", 256) + `","type":"x","data":{"object":{}}}`,
		`{"id":"evt_17","type":"x","data":{"object":{}}} trailing`,
		`{"id":"evt_18","type":"x","data":{"object":{}}}{}`,
		`{"id":1,"type":"x","data":{"object":{}}}`,
		`{"id":"evt_19","ID":"evt_20","Type":"payment_intent.succeeded","data":{"object":{"Currency":"GBP"}}}`,
		`{"id":"evt_21","type":"payment_intent.succeeded","data":{"object":{"amount":"990"}}}`,
		`{"id":"evt_22","type":"payment_intent.succeeded","data":{"object":{"amount":1e400}}}`,
		`{"id":"\u00e9v\ud800t","type":"payment_intent.succeeded","data":{"object":{"currency":"\u00c9"}}}`,
		"{\"id\":\"evt_\xff\",\"type\":\"x\",\"data\":{\"object\":{}}}",
		"\ufeff{\"id\":\"e\",\"type\":\"x\",\"data\":{\"object\":{}}}",
		` {"id":"e","type":"x","data":{"object": {} }} `,
		`null`, `[]`, `""`, `0`, `{}`, ``, `{`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, body []byte) {
		ev, orderID, err := api.ParseEvent(body)
		ev2, orderID2, err2 := api.ParseEvent(body)
		if ev != ev2 || orderID != orderID2 || (err == nil) != (err2 == nil) {
			t.Fatal("ParseEvent is not deterministic")
		}
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
			t.Fatalf("accepted a body that is not a JSON object: %q", body)
		}
		if n := len(ev.EventID); n < 1 || n > 255 {
			t.Fatalf("event id of %d bytes accepted", n)
		}
		if ev.Type == "" || len(ev.Type) > 255 {
			t.Fatalf("event type of %d bytes accepted", len(ev.Type))
		}
		if orderID < 0 {
			t.Fatalf("negative order id %d", orderID)
		}
		handled := ev.Type == seckill.PaymentSucceeded || ev.Type == seckill.PaymentFailed
		if handled {
			if ev.Currency != strings.ToLower(ev.Currency) {
				t.Fatalf("currency %q is not lower-case", ev.Currency)
			}
			if strings.ContainsAny(ev.Currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				t.Fatalf("currency %q has ASCII capitals", ev.Currency)
			}
		} else if orderID != 0 || ev.PaymentIntentID != "" || ev.AmountCents != 0 || ev.Currency != "" {
			t.Fatalf("unhandled type %q yields payment data: %+v, order %d", ev.Type, ev, orderID)
		}

		// Round trip: the event re-encoded as a canonical Stripe event parses
		// to the same values.
		object := map[string]any{}
		if handled {
			object = map[string]any{"id": ev.PaymentIntentID, "object": "payment_intent",
				"amount": ev.AmountCents, "currency": ev.Currency}
			if orderID > 0 {
				object["metadata"] = map[string]string{"order_id": strconv.FormatInt(orderID, 10)}
			}
		}
		canon, mErr := json.Marshal(map[string]any{"id": ev.EventID, "object": "event", "type": ev.Type,
			"data": map[string]any{"object": object}})
		if mErr != nil {
			t.Fatal(mErr)
		}
		ev3, orderID3, err3 := api.ParseEvent(canon)
		if err3 != nil || ev3 != ev || orderID3 != orderID {
			t.Fatalf("canonical form %s parses to %+v, %d, %v; want %+v, %d", canon, ev3, orderID3, err3, ev, orderID)
		}
	})
}

// ---------------------------------------------------------------------------
// Idempotency keys

func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{
		"", "a", "key-1", "~", "!", " ", "a b", "a\tb", "a\x7f", "a\x20", "\x21\x7e",
		"\x00", "é", "\xff", strings.Repeat("k", 255), strings.Repeat("k", 256),
		strings.Repeat("k", 254) + " ", "550e8400-e29b-41d4-a716-446655440000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		want := len(key) >= 1 && len(key) <= 255
		for i := 0; want && i < len(key); i++ {
			want = key[i] >= 0x20 && key[i] <= 0x7E
		}
		if got := api.ValidIdempotencyKey(key); got != want {
			t.Fatalf("ValidIdempotencyKey(%q) = %v, want %v", key, got, want)
		}
	})
}
