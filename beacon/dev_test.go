package beacon_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/beacon"
)

// The development chain is pinned: a change to its seed or hash formula
// would make every draw `seckill dev` made before fail to verify.
const (
	wantDevHash      = "931142acaf15e6cbe9746a4b22c853c0cf92f7dbe7c313cb24782f7f95fc23b6"
	wantDevPublicKey = "8cd6acc25f0af072928e6d0bbcbb70341ce697d188a6b8163a05b62023d544c5ca2daf3943f0a7bcb3a4ff674fdea06706dbba6be4453c52f417d743402aa4062013b3258fdb05aa2f523a8fb3d6e2b2f983bcd447c50f14bf585275086f21b7"
)

func TestDev_IsPinnedAndTimedLikeQuicknet(t *testing.T) {
	d := beacon.Dev
	require.Equal(t, wantDevHash, d.Hash)
	require.Equal(t, wantDevPublicKey, hex.EncodeToString(d.PublicKey))
	require.True(t, d.Dev)
	require.False(t, beacon.Quicknet.Dev)
	require.Equal(t, beacon.Quicknet.Genesis, d.Genesis)
	require.Equal(t, beacon.Quicknet.Period, d.Period)
	require.Equal(t, beacon.UnchainedG1, d.Scheme)

	// The documented formula: hex(SHA-256(domain ‖ public key)).
	h := sha256.Sum256(append([]byte("seckill development chain hash v1\n"), d.PublicKey...))
	require.Equal(t, hex.EncodeToString(h[:]), d.Hash)
}

func TestDevSigner_RoundsVerifyAgainstDev(t *testing.T) {
	s := beacon.DevSigner()
	require.Equal(t, beacon.Dev, s.Chain())
	for _, r := range []uint64{1, 2, 123, 20_000_000} {
		sig := s.Sign(r)
		require.NoError(t, beacon.Dev.Verify(r, sig), "round %d", r)
		require.ErrorIs(t, beacon.Dev.Verify(r+1, sig), beacon.ErrBadSignature, "round %d's signature for the next", r)
	}
	// Signed again after a "restart", the same round gives the same bytes.
	require.Equal(t, s.Sign(7), beacon.DevSigner().Sign(7))
}

func TestNewSigner_ItsSignaturesDoNotVerifyAgainstDev(t *testing.T) {
	s, err := beacon.NewSigner()
	require.NoError(t, err)
	c := s.Chain()
	require.True(t, c.Dev)
	require.NotEqual(t, beacon.Dev.Hash, c.Hash)
	h := sha256.Sum256(append([]byte("seckill development chain hash v1\n"), c.PublicKey...))
	require.Equal(t, hex.EncodeToString(h[:]), c.Hash, "derived like Dev's")

	sig := s.Sign(5)
	require.NoError(t, c.Verify(5, sig))
	require.ErrorIs(t, beacon.Dev.Verify(5, sig), beacon.ErrBadSignature)
	require.ErrorIs(t, c.Verify(5, beacon.DevSigner().Sign(5)), beacon.ErrBadSignature)

	other, err := beacon.NewSigner()
	require.NoError(t, err)
	require.NotEqual(t, c.Hash, other.Chain().Hash, "two fresh keys")
}

func TestLookup_FindsOnlyThePinnedChains(t *testing.T) {
	q, ok := beacon.Lookup(beacon.Quicknet.Hash)
	require.True(t, ok)
	require.Equal(t, beacon.Quicknet, q)

	d, ok := beacon.Lookup(beacon.Dev.Hash)
	require.True(t, ok)
	require.Equal(t, beacon.Dev, d)

	// The key handed out is a copy: spoiling it leaves the pinned one intact.
	d.PublicKey[0] ^= 1
	require.Equal(t, wantDevPublicKey, hex.EncodeToString(beacon.Dev.PublicKey))

	s, err := beacon.NewSigner()
	require.NoError(t, err)
	for _, h := range []string{"", "00", s.Chain().Hash, beacon.Quicknet.Hash[1:]} {
		_, ok := beacon.Lookup(h)
		require.False(t, ok, "%q", h)
	}
}
