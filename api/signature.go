package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureTolerance is how far a webhook's timestamp may be from now.
const SignatureTolerance = 300 * time.Second

// Errors of VerifySignature.
var (
	ErrSignatureHeader  = errors.New("malformed Stripe-Signature header")
	ErrSignatureStale   = errors.New("signature timestamp outside the tolerance")
	ErrSignatureNoMatch = errors.New("no v1 signature matches")
)

// VerifySignature checks a Stripe-Signature header ("t=<unix>,v1=<hex>
// [,v1=<hex>...]") against body: some v1 must be the hex HMAC-SHA256, keyed
// with secret, of "<t>.<body>", compared in constant time, and t must be
// within SignatureTolerance of now. Unknown schemes (v0, ...) are ignored.
func VerifySignature(header string, body, secret []byte, now time.Time) error {
	var (
		ts   int64
		seen bool
		sigs [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureHeader
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || seen {
				return ErrSignatureHeader
			}
			ts, seen = n, true
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				continue // not one of ours; another may match
			}
			sigs = append(sigs, sig)
		}
	}
	if !seen || len(sigs) == 0 {
		return ErrSignatureHeader
	}
	age := now.Sub(time.Unix(ts, 0))
	if age > SignatureTolerance || age < -SignatureTolerance {
		return ErrSignatureStale
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	match := false
	for _, sig := range sigs {
		// Check every candidate so timing does not tell which one matched.
		if hmac.Equal(sig, want) {
			match = true
		}
	}
	if !match {
		return ErrSignatureNoMatch
	}
	return nil
}

// Sign returns a Stripe-Signature header for body at t, for the dev payment
// provider and tests.
func Sign(body, secret []byte, t time.Time) string {
	mac := hmac.New(sha256.New, secret)
	ts := strconv.FormatInt(t.Unix(), 10)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
