package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

func TestParseEntry_CarriesTheTermsFixedAtAdmission(t *testing.T) {
	in, err := parseEntry(map[string]any{
		"o": "42", "u": "alice", "s": "7", "t": "1763805600000", "p": "1763805630512", "a": "990", "c": "usd",
	})

	require.NoError(t, err)
	require.Equal(t, seckill.SagaInput{
		OrderID: 42, SaleID: 7, UserID: "alice",
		AdmittedAt: time.UnixMilli(1763805600000).UTC(), PayBy: time.UnixMilli(1763805630512).UTC(),
		AmountCents: 990, Currency: "usd", Item: seckill.DefaultItem,
	}, in)
}

func TestParseEntry_EntriesFromBeforePayableAtAdmission(t *testing.T) {
	in, err := parseEntry(map[string]any{"o": "42", "u": "alice", "s": "7", "t": "1763805600000"})

	require.NoError(t, err)
	require.True(t, in.PayBy.IsZero(), "the saga derives pay_by from the admission time and the sale")
	require.Zero(t, in.AmountCents)
}

func TestParseEntry_RefusesWhatClaimLuaCannotHaveWritten(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"no order":     {"u": "alice", "s": "7", "t": "1"},
		"no user":      {"o": "42", "s": "7", "t": "1"},
		"no sale":      {"o": "42", "u": "alice", "t": "1"},
		"no time":      {"o": "42", "u": "alice", "s": "7"},
		"bad pay_by":   {"o": "42", "u": "alice", "s": "7", "t": "1", "p": "soon", "a": "990", "c": "usd"},
		"bad amount":   {"o": "42", "u": "alice", "s": "7", "t": "1", "p": "2", "a": "9.90", "c": "usd"},
		"order not id": {"o": "x", "u": "alice", "s": "7", "t": "1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseEntry(values)
			require.Error(t, err)
		})
	}
}

func TestRelayAliveKey_IsUnderTheInstallationsPrefix(t *testing.T) {
	require.Equal(t, "shop-a:relay:alive:host-1-2-ab", New(nil, "shop-a").relayAliveKey("host-1-2-ab"))
}

// Each code claim.lua or join.lua returns is its own answer, named by
// the API's word for it; a code neither returns is not an answer.
func TestScriptOutcome_EveryCodeHasItsOwnName(t *testing.T) {
	seen := map[seckill.Outcome]bool{}
	for code := int64(0); code <= 11; code++ {
		o, ok := scriptOutcome(code)
		require.True(t, ok, "code %d", code)
		require.False(t, seen[o], "code %d: %s twice", code, o)
		seen[o] = true
	}
	for _, code := range []any{int64(-1), int64(12), "0", nil} {
		_, ok := scriptOutcome(code)
		require.False(t, ok, "code %v", code)
	}
}

func TestParseEntry_ADrawsAdmissionIsDrawn(t *testing.T) {
	in, err := parseEntry(map[string]any{"o": "42", "u": "alice", "s": "7", "t": "1763805600000", "d": "1"})

	require.NoError(t, err)
	require.True(t, in.Drawn)
}
