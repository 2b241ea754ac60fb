package beacon_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/beacon"
)

// relay serves answer(round) for every GET /{hash}/public/{round}: a relay
// that may lie.
func relay(t *testing.T, answer func(round uint64) any) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/")
		n, err := strconv.ParseUint(parts[len(parts)-1], 10, 64)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		switch a := answer(n).(type) {
		case string:
			_, _ = w.Write([]byte(a))
		default:
			require.NoError(t, json.NewEncoder(w).Encode(a))
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// signedBy is round n as signer signs it, its signature passed through spoil.
func signedBy(signer *beacon.Signer, n uint64, spoil func([]byte) []byte) servedRound {
	sig := spoil(signer.Sign(n))
	rnd := beacon.Randomness(sig)
	return servedRound{Round: n, Signature: hex.EncodeToString(sig), Randomness: hex.EncodeToString(rnd[:])}
}

func same(sig []byte) []byte { return sig }

func flipLastBit(sig []byte) []byte {
	sig = append([]byte(nil), sig...)
	sig[len(sig)-1] ^= 1
	return sig
}

func fetch(t *testing.T, urls []string, chain beacon.Chain, round uint64) (beacon.Round, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return beacon.NewClient(urls, nil).Fetch(ctx, chain, round)
}

func requireRound(t *testing.T, round uint64, got beacon.Round) {
	t.Helper()
	require.Equal(t, round, got.Number)
	require.NoError(t, beacon.Dev.Verify(round, got.Signature))
	require.Equal(t, beacon.DevSigner().Sign(round), got.Signature)
	require.Equal(t, beacon.Randomness(got.Signature), got.Randomness())
}

func TestClient_FirstURLDownSecondUp(t *testing.T) {
	down, downTS := startBeacon(t, beacon.DevSigner(), 0)
	down.SetDown(true)
	_, up := startBeacon(t, beacon.DevSigner(), 0)

	got, err := fetch(t, []string{downTS.URL, up.URL}, beacon.Dev, 77)
	require.NoError(t, err)
	requireRound(t, 77, got)

	// The same beacon, back up, answers on its own.
	down.SetDown(false)
	got, err = fetch(t, []string{downTS.URL}, beacon.Dev, 78)
	require.NoError(t, err)
	requireRound(t, 78, got)
}

func TestClient_ATamperedSignatureIsSkipped(t *testing.T) {
	tamper := relay(t, func(n uint64) any { return signedBy(beacon.DevSigner(), n, flipLastBit) })
	_, honest := startBeacon(t, beacon.DevSigner(), 0)

	got, err := fetch(t, []string{tamper, honest.URL}, beacon.Dev, 77)
	require.NoError(t, err)
	requireRound(t, 77, got)

	got, err = fetch(t, []string{tamper}, beacon.Dev, 77)
	require.ErrorIs(t, err, beacon.ErrBadSignature)
	require.NotErrorIs(t, err, beacon.ErrNotYet)
	require.ErrorContains(t, err, tamper)
	require.Equal(t, beacon.Round{}, got, "never a round with an error")
}

// Answers that are not a verified round 77 of Dev are each refused.
func TestClient_RefusesWhatIsNotTheRoundAsked(t *testing.T) {
	stranger, err := beacon.NewSigner()
	require.NoError(t, err)
	for name, answer := range map[string]func(uint64) any{
		"another round's valid signature": func(n uint64) any { return signedBy(beacon.DevSigner(), n+1, same) },
		"its signature, labelled another round": func(n uint64) any {
			r := signedBy(beacon.DevSigner(), n, same)
			r.Round = n + 1
			return r
		},
		"another key's signature": func(n uint64) any { return signedBy(stranger, n, same) },
		"not JSON":                func(uint64) any { return "<html>gateway</html>" },
		"a signature not in hex":  func(n uint64) any { return servedRound{Round: n, Signature: "zz"} },
		"no signature":            func(n uint64) any { return servedRound{Round: n} },
		"randomness that is not SHA-256 of the signature": func(n uint64) any {
			r := signedBy(beacon.DevSigner(), n, same)
			r.Randomness = strings.Repeat("00", 32)
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			liar := relay(t, answer)
			got, err := fetch(t, []string{liar}, beacon.Dev, 77)
			require.Error(t, err)
			require.NotErrorIs(t, err, beacon.ErrNotYet)
			require.Equal(t, beacon.Round{}, got)

			_, honest := startBeacon(t, beacon.DevSigner(), 0)
			got, err = fetch(t, []string{liar, honest.URL}, beacon.Dev, 77)
			require.NoError(t, err)
			requireRound(t, 77, got)
		})
	}
}

func TestClient_AllDownNamesEachURL(t *testing.T) {
	var urls []string
	for range 2 {
		srv, ts := startBeacon(t, beacon.DevSigner(), 0)
		srv.SetDown(true)
		urls = append(urls, ts.URL)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // a relay nobody answers at
	urls = append(urls, gone.URL)

	got, err := fetch(t, urls, beacon.Dev, 77)
	require.Error(t, err)
	require.NotErrorIs(t, err, beacon.ErrNotYet)
	require.Equal(t, beacon.Round{}, got)
	for _, u := range urls {
		require.ErrorContains(t, err, u)
	}
	require.Equal(t, 2, strings.Count(err.Error(), "503"), err.Error())
}

// A round whose time has not come on the local clock is not asked for.
func TestClient_AFutureRoundIsNotYet(t *testing.T) {
	var asked atomic.Bool
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked.Store(true) }))
	t.Cleanup(spy.Close)

	next := beacon.Dev.FirstRoundAt(time.Now().Add(time.Minute))
	_, err := fetch(t, []string{spy.URL}, beacon.Dev, next)
	require.ErrorIs(t, err, beacon.ErrNotYet)
	_, err = fetch(t, []string{spy.URL}, beacon.Dev, ^uint64(0))
	require.ErrorIs(t, err, beacon.ErrNotYet)
	require.False(t, asked.Load())
}

// A round every beacon says it has not yet (their clocks behind ours) is
// not yet; one beacon that has it is enough.
func TestClient_EveryBeaconWithoutTheRoundIsNotYet(t *testing.T) {
	_, behind1 := startBeacon(t, beacon.DevSigner(), 100)
	_, behind2 := startBeacon(t, beacon.DevSigner(), 100)
	urls := []string{behind1.URL, behind2.URL}
	_, err := fetch(t, urls, beacon.Dev, 200)
	require.ErrorIs(t, err, beacon.ErrNotYet)
	require.ErrorContains(t, err, behind1.URL)
	require.ErrorContains(t, err, behind2.URL)

	_, up := startBeacon(t, beacon.DevSigner(), 0)
	got, err := fetch(t, append(urls, up.URL), beacon.Dev, 200)
	require.NoError(t, err)
	requireRound(t, 200, got)

	// One beacon behind and one down is a fault, not "not yet".
	down, downTS := startBeacon(t, beacon.DevSigner(), 0)
	down.SetDown(true)
	_, err = fetch(t, []string{behind1.URL, downTS.URL}, beacon.Dev, 200)
	require.Error(t, err)
	require.NotErrorIs(t, err, beacon.ErrNotYet)
}

func TestClient_RoundZeroAndNoURLsAreErrors(t *testing.T) {
	_, up := startBeacon(t, beacon.DevSigner(), 0)
	_, err := fetch(t, []string{up.URL}, beacon.Dev, 0)
	require.Error(t, err)
	_, err = fetch(t, nil, beacon.Dev, 77)
	require.Error(t, err)
}

// A canceled context stops at the URL it was at.
func TestClient_ACanceledContextStops(t *testing.T) {
	_, up := startBeacon(t, beacon.DevSigner(), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := beacon.NewClient([]string{up.URL, up.URL}, nil).Fetch(ctx, beacon.Dev, 77)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, strings.Count(err.Error(), "context canceled"), "one URL asked: %s", err)
}

// BenchmarkVerify is the BLS check of one quicknet round (the pinned key,
// round 123's signature), what a draw pays once and `seckill draw verify`
// once per draw.
func BenchmarkVerify(b *testing.B) {
	sig, err := hex.DecodeString(quicknetRounds[0].sig)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := beacon.Quicknet.Verify(quicknetRounds[0].round, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetch is one round read from a development beacon on loopback
// and verified: the draw's cost past the round's time, network aside.
func BenchmarkFetch(b *testing.B) {
	s := beacon.DevSigner()
	web := httptest.NewServer(beacon.NewServer(s))
	defer web.Close()
	c := beacon.NewClient([]string{web.URL}, nil)
	round := s.Chain().FirstRoundAt(time.Now().Add(-time.Hour))
	for b.Loop() {
		if _, err := c.Fetch(b.Context(), s.Chain(), round); err != nil {
			b.Fatal(err)
		}
	}
}
