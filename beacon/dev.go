package beacon

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/cloudflare/circl/sign/bls"
)

// devSeed is the development chain's key material, published on purpose:
// `seckill dev` must sign the same chain after every restart so that its
// draws still verify, and a key anyone can derive proves nothing, which is
// why the chain is marked Dev and `seckill draw verify` says so.
const devSeed = "seckill development beacon: anyone can sign its rounds, so it proves nothing"

// devHashDomain separates a development chain's hash from any other use of
// SHA-256 over a public key. A development chain's Hash is
//
//	hex(SHA-256(devHashDomain ‖ public key))
//
// with the public key in its 96-byte compressed form. drand's own chain
// hash covers its group file, which a one-key development chain has not.
const devHashDomain = "seckill development chain hash v1\n"

// devBeaconID names development chains in their info, where drand puts the
// beacon's id ("quicknet").
const devBeaconID = "seckill-dev"

// Dev is seckill's development chain: Quicknet's genesis, period and scheme,
// so rounds fall at the same times, but a key derived from devSeed (circl's
// bls.KeyGen[bls.KeyG2SigG1], the seed as input key material, no salt, no
// info) and its Hash derived from that key as devHashDomain says.
var Dev = DevSigner().Chain()

// Lookup returns the pinned chain with that hash, Quicknet or Dev: a
// published draw names its chain by hash, and only a pinned key may check
// it. The chain's key is a copy the caller may keep.
func Lookup(hash string) (Chain, bool) {
	for _, c := range []Chain{Quicknet, Dev} {
		if strings.EqualFold(c.Hash, hash) {
			c.PublicKey = bytes.Clone(c.PublicKey)
			return c, true
		}
	}
	return Chain{}, false
}

// Signer signs a development chain's rounds: `seckill dev`'s beacon, and
// tests that need a beacon they control.
type Signer struct {
	key   *bls.PrivateKey[bls.KeyG2SigG1]
	chain Chain
}

// DevSigner signs Dev's rounds. Its key is derived again on each call, from
// the published seed, so every one signs the same chain.
func DevSigner() *Signer {
	s, err := signerFrom([]byte(devSeed))
	if err != nil {
		// The seed is a constant longer than KeyGen's 32-byte minimum:
		// failing here is a broken build, not a runtime condition.
		panic(fmt.Errorf("beacon: development key: %w", err))
	}
	return s
}

// NewSigner signs a development chain with a fresh random key, for tests
// where nobody may know the key in advance (a Dev signature must not pass
// for it, nor it for Dev).
func NewSigner() (*Signer, error) {
	ikm := make([]byte, 32)
	if _, err := rand.Read(ikm); err != nil {
		return nil, fmt.Errorf("random key material: %w", err)
	}
	return signerFrom(ikm)
}

// signerFrom derives a key from ikm and the development chain it signs.
func signerFrom(ikm []byte) (*Signer, error) {
	key, err := bls.KeyGen[bls.KeyG2SigG1](ikm, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	pub, err := key.PublicKey().MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return &Signer{key: key, chain: devChain(pub)}, nil
}

// devChain is the development chain of public key pub: rounds at
// Quicknet's times, so a sale's round is the same whichever beacon it uses.
func devChain(pub []byte) Chain {
	h := sha256.New()
	h.Write([]byte(devHashDomain))
	h.Write(pub)
	return Chain{
		Hash:      hex.EncodeToString(h.Sum(nil)),
		PublicKey: pub,
		Genesis:   Quicknet.Genesis,
		Period:    Quicknet.Period,
		Scheme:    UnchainedG1,
		Dev:       true,
	}
}

// Chain is the chain s signs; its key is a copy the caller may keep.
func (s *Signer) Chain() Chain {
	c := s.chain
	c.PublicKey = bytes.Clone(c.PublicKey)
	return c
}

// Sign is s's signature of round, which Chain().Verify accepts (round 0,
// which does not exist, is signed all the same and never verifies).
func (s *Signer) Sign(round uint64) []byte {
	return bls.Sign(s.key, Message(round))
}
