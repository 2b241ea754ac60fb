package beacon_test

import (
	"encoding/hex"
	"math"
	"testing"
	"time"

	"github.com/cloudflare/circl/ecc/bls12381"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/beacon"
)

// quicknetRounds are real quicknet rounds, kept as test vectors; each
// verifies against the pinned key. Sources:
//   - 123: as drand's public API serves it
//     (https://api3.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/public/123),
//     the vector drand-verify (noislabs/drand-verify, src/verify.rs,
//     verify_works_for_g1g2_swapped_rfc) checks quicknet with.
//   - 42: drand's documentation, "Our HTTP API" (drand/drand-docs,
//     docs/developer/06-HTTP-API.md: curl api.drand.sh/v2/beacons/quicknet/rounds/42).
//   - 12040883: tlock's deterministic quicknet vector (drand/tlock,
//     tlock_test.go, TestDeterministicEncryptionDecryption "quicknet-g1 round 12040883").
var quicknetRounds = []struct {
	round uint64
	sig   string
}{
	{123, "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92"},
	{42, "95a9f9f5b231b7714de1553105d8ffdf3dcda24cfdb1e689319bccf79a9c8ce430a91b811fbfaf763900bc998b5d686a"},
	{12040883, "929906c959032ab363c9f26570d215d66f5c06cb0c44fe508c12bb5839f04ec895bb6868e5b9ff13ab289bdb5266b394"},
}

func sigOf(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func TestQuicknet_RealRoundsVerify(t *testing.T) {
	for _, v := range quicknetRounds {
		require.NoError(t, beacon.Quicknet.Verify(v.round, sigOf(t, v.sig)), "round %d", v.round)
	}
}

// Tampering with the round, the signature or the key fails verification.
func TestQuicknet_TamperedRoundsDoNotVerify(t *testing.T) {
	v := quicknetRounds[0]
	sig := sigOf(t, v.sig)
	require.ErrorIs(t, beacon.Quicknet.Verify(v.round+1, sig), beacon.ErrBadSignature, "another round")

	flipped := append([]byte(nil), sig...)
	flipped[len(flipped)-1] ^= 1
	require.ErrorIs(t, beacon.Quicknet.Verify(v.round, flipped), beacon.ErrBadSignature, "a flipped bit")
	require.ErrorIs(t, beacon.Quicknet.Verify(v.round, sig[:47]), beacon.ErrBadSignature, "a short signature")
	require.ErrorIs(t, beacon.Quicknet.Verify(v.round, nil), beacon.ErrBadSignature, "no signature")

	other := beacon.Quicknet
	other.PublicKey = append([]byte(nil), other.PublicKey...)
	other.PublicKey[10] ^= 1
	require.Error(t, other.Verify(v.round, sig), "another key")

	require.Error(t, beacon.Quicknet.Verify(0, sig), "round 0")
	chained := beacon.Quicknet
	chained.Scheme = "pedersen-bls-chained"
	require.Error(t, chained.Verify(v.round, sig), "a scheme not checked")
}

func TestRandomness_IsSHA256OfTheSignature(t *testing.T) {
	// sha256 of the 48 bytes of round 123's signature, computed apart
	// (python3 -c 'import hashlib;print(hashlib.sha256(bytes.fromhex(SIG)).hexdigest())').
	r := beacon.Randomness(sigOf(t, quicknetRounds[0].sig))
	require.Equal(t, wantRandomness123, hex.EncodeToString(r[:]))
}

func TestChain_RoundTimes(t *testing.T) {
	c := beacon.Quicknet
	require.Equal(t, c.Genesis, c.RoundTime(1))
	require.Equal(t, c.Genesis.Add(3*time.Second), c.RoundTime(2))
	require.Equal(t, uint64(1), c.FirstRoundAt(c.Genesis.Add(-time.Hour)))
	require.Equal(t, uint64(1), c.FirstRoundAt(c.Genesis))
	require.Equal(t, uint64(2), c.FirstRoundAt(c.Genesis.Add(time.Millisecond)))
	require.Equal(t, uint64(2), c.FirstRoundAt(c.Genesis.Add(3*time.Second)))
	for _, r := range []uint64{1, 2, 123, 20_000_000} {
		require.Equal(t, r, c.FirstRoundAt(c.RoundTime(r)))
		require.True(t, !c.RoundTime(c.FirstRoundAt(c.RoundTime(r).Add(time.Nanosecond))).Before(c.RoundTime(r).Add(time.Nanosecond)))
	}
}

const wantRandomness123 = "fb8f7bc29bf24db51871ec8c79f3a1e4bd0557bc0dfcee9ed1d924e69d1c60dc"

// Each real signature is its own round's only: it fails for every other one.
func TestQuicknet_ARealSignatureDoesNotVerifyForAnotherRealRound(t *testing.T) {
	for _, v := range quicknetRounds {
		for _, w := range quicknetRounds {
			if v.round != w.round {
				require.ErrorIs(t, beacon.Quicknet.Verify(w.round, sigOf(t, v.sig)), beacon.ErrBadSignature, "round %d's signature for round %d", v.round, w.round)
			}
		}
	}
}

// A round beyond time.Duration's range is far in the future, not wrapped
// into the past.
func TestChain_AHugeRoundIsInTheFuture(t *testing.T) {
	c := beacon.Quicknet
	future := time.Now().Add(200 * 365 * 24 * time.Hour)
	for _, r := range []uint64{1 << 62, 1<<63 + 5, ^uint64(0)} {
		require.True(t, c.RoundTime(r).After(future), "round %d at %s", r, c.RoundTime(r))
	}
	last := uint64(math.MaxInt64/int64(c.Period)) + 1
	require.Equal(t, c.Genesis.Add(time.Duration(last-1)*c.Period), c.RoundTime(last), "the last exact round")
}

// A round has one signature: the same point of G1 uncompressed (which
// circl's bls.Verify also accepts) is refused, or whoever serves or
// records the round could choose between two randomness values.
func TestQuicknet_OnlyTheCompressedEncodingVerifies(t *testing.T) {
	v := quicknetRounds[0]
	sig := sigOf(t, v.sig)
	var p bls12381.G1
	require.NoError(t, p.SetBytes(sig))
	uncompressed := p.Bytes()
	require.Len(t, uncompressed, 96)
	require.NotEqual(t, beacon.Randomness(sig), beacon.Randomness(uncompressed), "another encoding, another randomness")
	require.ErrorIs(t, beacon.Quicknet.Verify(v.round, uncompressed), beacon.ErrBadSignature)
	require.False(t, beacon.Canonical(uncompressed))
	require.True(t, beacon.Canonical(sig))
	require.NoError(t, beacon.Quicknet.Verify(v.round, sig))
}
