// Package beacon is the public randomness a draw's ranks depend on
// (docs/API.md "Fair start": a draw nobody can bias): a drand chain's
// pinned parameters, the round a draw waits for, and the offline check of
// a round's BLS signature. Fetching rounds and the development beacon are
// built on it.
package beacon

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cloudflare/circl/ecc/bls12381"
	"github.com/cloudflare/circl/sign/bls"
)

// Chain is a drand chain's public parameters: what a round's signature is
// checked against, and when each round is published.
type Chain struct {
	// Hash is the chain hash, hex: how drand's HTTP API names the chain.
	Hash string
	// PublicKey is the chain's group key, a compressed point on G2 (96
	// bytes): the scheme bls-unchained-g1-rfc9380 signs on G1.
	PublicKey []byte
	// Genesis is when round 1 was published; Period the time between rounds.
	Genesis time.Time
	Period  time.Duration
	// Scheme is drand's scheme id; only bls-unchained-g1-rfc9380 is known.
	Scheme string
	// Dev marks a development chain (seckill dev's own beacon), which
	// `seckill draw verify` names as such.
	Dev bool
}

// UnchainedG1 is the scheme quicknet uses: each round's signature signs
// SHA-256 of the round number alone (unchained), on G1, hashed to the
// curve as RFC 9380 says (domain BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_,
// circl's KeyG2SigG1).
const UnchainedG1 = "bls-unchained-g1-rfc9380"

// Quicknet is the League of Entropy's quicknet chain, pinned. Source:
// drand's chain info endpoint,
// https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/info
// (public_key, period 3, genesis_time 1692803367, schemeID
// bls-unchained-g1-rfc9380), as drand's documentation lists it.
var Quicknet = Chain{
	Hash:      "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
	PublicKey: mustHex("83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"),
	Genesis:   time.Unix(1692803367, 0).UTC(),
	Period:    3 * time.Second,
	Scheme:    UnchainedG1,
}

// ErrBadSignature is Verify's answer for a signature that is not the
// chain's for the round.
var ErrBadSignature = errors.New("the round's signature does not verify against the chain's public key")

// Message is what round's signature signs in an unchained scheme:
// SHA-256 of the round number, 8 bytes big-endian.
func Message(round uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], round)
	m := sha256.Sum256(b[:])
	return m[:]
}

// Verify checks that sig is the chain's signature of round: ErrBadSignature
// when it is not (a malformed signature included), an error naming the
// fault for a chain this package cannot check.
func (c Chain) Verify(round uint64, sig []byte) error {
	if c.Scheme != UnchainedG1 {
		return fmt.Errorf("chain %s: scheme %q is not %s", c.Hash, c.Scheme, UnchainedG1)
	}
	if round == 0 {
		return fmt.Errorf("round 0 does not exist (rounds start at 1)")
	}
	var pub bls.PublicKey[bls.KeyG2SigG1]
	if err := pub.UnmarshalBinary(c.PublicKey); err != nil {
		return fmt.Errorf("chain %s: public key: %w", c.Hash, err)
	}
	// One encoding per signature: circl also accepts the point
	// uncompressed (96 bytes), and the randomness is SHA-256 of the
	// bytes, so a second encoding would be a second randomness for the
	// same round, for whoever serves or records it to choose between.
	if !Canonical(sig) {
		return ErrBadSignature
	}
	if !bls.Verify(&pub, Message(round), bls.Signature(sig)) {
		return ErrBadSignature
	}
	return nil
}

// Canonical reports whether sig is a point of G1 in its one canonical
// form, compressed (48 bytes), as drand publishes it.
func Canonical(sig []byte) bool {
	if len(sig) != bls12381.G1SizeCompressed {
		return false
	}
	var p bls12381.G1
	return p.SetBytes(sig) == nil && bytes.Equal(p.BytesCompressed(), sig)
}

// Randomness is a round's randomness: SHA-256 of its signature.
func Randomness(sig []byte) [32]byte { return sha256.Sum256(sig) }

// RoundTime is when round is published: genesis + (round - 1) x period.
// A round too far for time.Duration (some 292 years of rounds) is placed at
// genesis + the longest Duration: still in the future, never wrapped round
// into the past, where a beacon would serve it and a client ask for it.
func (c Chain) RoundTime(round uint64) time.Time {
	if round == 0 {
		return c.Genesis
	}
	n := round - 1
	if c.Period > 0 && n > uint64(math.MaxInt64/int64(c.Period)) {
		return c.Genesis.Add(math.MaxInt64)
	}
	return c.Genesis.Add(time.Duration(n) * c.Period)
}

// FirstRoundAt is the first round published at or after t (round 1 for any
// t up to genesis).
func (c Chain) FirstRoundAt(t time.Time) uint64 {
	if !t.After(c.Genesis) {
		return 1
	}
	d := t.Sub(c.Genesis)
	n := uint64(d / c.Period)
	if d%c.Period != 0 {
		n++
	}
	return n + 1
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
