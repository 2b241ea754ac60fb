// Package pow is seckill's proof of work (docs/API.md "Proof of work"):
// ALTCHA's scheme, version 1, so ALTCHA's widget and libraries solve and
// check its challenges unchanged.
//
// A challenge is a salt, the hex SHA-256 of the salt followed by a secret
// number written in decimal, the largest the number may be (maxnumber, the
// sale's difficulty), and the hex HMAC-SHA256 of the challenge under the
// API's key. The client finds the number by trying 0, 1, 2, ... (about
// maxnumber/2 hashes on average) and sends back the base64 of the JSON
// {"algorithm", "challenge", "number", "salt", "signature"[, "took"]}.
// The API checks it with one HMAC and one SHA-256, and keeps no state
// until it has been used (the single use is the caller's: see
// redisstore.UseProof).
//
// The salt carries the challenge's binding, ALTCHA-style, as query
// parameters after a random hex prefix:
//
//	<24 hex>?sale=<sale id>&user=<16 hex>&expires=<unix seconds>&
//
// user is the first 8 bytes of SHA-256 of the caller's sub (never the sub
// itself); expires is 5 minutes after the sale's start or 5 minutes after
// the challenge was issued, whichever is later. The trailing "&" is
// altcha-lib's delimiter against parameter splicing. The salt is signed
// through the challenge, so none of it can be changed.
package pow

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Algorithm is the only hash this package speaks (ALTCHA's default).
const Algorithm = "SHA-256"

// Validity is how long a challenge stays valid after the later of the
// sale's start and its issue.
const Validity = 5 * time.Minute

// saltBytes is the length of the salt's random part (altcha-lib's default).
const saltBytes = 12

// userHashBytes is how much of SHA-256(sub) the salt carries.
const userHashBytes = 8

// maxPayload bounds the header a client may send (a real one is ~300 bytes).
const maxPayload = 2048

// keyLabel derives the proof-of-work key from another secret.
const keyLabel = "seckill proof-of-work key v1"

// The reasons a proof is refused. The API answers every one of them 403
// PROOF_REQUIRED, with a detail that says which.
var (
	ErrMissing   = errors.New("no proof of work")
	ErrMalformed = errors.New("malformed proof of work")
	ErrSignature = errors.New("proof of work for a challenge this API did not issue")
	ErrWrong     = errors.New("proof of work does not solve its challenge")
	ErrExpired   = errors.New("proof of work expired")
	ErrOtherSale = errors.New("proof of work for another sale")
	ErrOtherUser = errors.New("proof of work for another user")
	// ErrUsed is not returned by Verify (which keeps no state): the
	// caller's single-use record says it.
	ErrUsed = errors.New("proof of work already used")
)

// Challenge is what GET /api/v1/sales/{id}/challenge answers: ALTCHA's
// challenge JSON.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Proof is a solution that Verify accepted.
type Proof struct {
	// Challenge names the solution: only one number solves a challenge,
	// so a record of used challenges is a record of used solutions.
	Challenge string
	SaleID    int64
	// Expires is when the challenge stops being valid; a record of its use
	// need not outlive it.
	Expires time.Time
}

// Key issues and verifies challenges. Every API replica must hold the same
// key, so that any of them verifies a challenge another issued.
type Key struct {
	key  []byte
	rand io.Reader
}

// NewKey returns a Key that signs with key (as bytes: a string key is its
// UTF-8, as in ALTCHA's libraries).
func NewKey(key []byte) *Key {
	return &Key{key: append([]byte(nil), key...), rand: rand.Reader}
}

// DeriveKey derives a proof-of-work key from another secret (the webhook
// secret), so that every replica agrees without configuration of its own:
// the hex of HMAC-SHA256(secret, "seckill proof-of-work key v1"). Hex, so
// the same key can be given as a string to ALTCHA's libraries.
func DeriveKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	_, _ = m.Write([]byte(keyLabel))
	return []byte(hex.EncodeToString(m.Sum(nil)))
}

// Expiry is when a challenge issued at now for a sale starting at
// startsAt stops being valid: Validity after the later of the two, in
// whole seconds (the salt carries unix seconds).
func Expiry(startsAt, now time.Time) time.Time {
	if now.Before(startsAt) {
		now = startsAt
	}
	return time.Unix(now.Add(Validity).Unix(), 0)
}

// UserHash is what a salt carries to name the user: the hex of the first 8
// bytes of SHA-256(sub).
func UserHash(sub string) string {
	sum := sha256.Sum256([]byte(sub))
	return hex.EncodeToString(sum[:userHashBytes])
}

// Issue makes a challenge of difficulty (maxnumber) for user sub on sale
// saleID, valid until expires (see Expiry). The secret number is drawn
// uniformly from [0, difficulty].
func (k *Key) Issue(saleID int64, sub string, difficulty int64, expires time.Time) (Challenge, error) {
	if difficulty < 1 {
		return Challenge{}, fmt.Errorf("pow: difficulty %d: must be at least 1", difficulty)
	}
	random := make([]byte, saltBytes)
	if _, err := io.ReadFull(k.rand, random); err != nil {
		return Challenge{}, fmt.Errorf("pow: random salt: %w", err)
	}
	n, err := rand.Int(k.rand, big.NewInt(difficulty+1))
	if err != nil {
		return Challenge{}, fmt.Errorf("pow: random number: %w", err)
	}
	return k.create(Salt(hex.EncodeToString(random), saleID, sub, expires), n.Int64(), difficulty), nil
}

// Salt is the salt of a challenge for sub on sale saleID until expires,
// after the random hex prefix random: the parameters in the order
// altcha-lib's createChallenge writes them (its params, then expires).
func Salt(random string, saleID int64, sub string, expires time.Time) string {
	return random + "?sale=" + strconv.FormatInt(saleID, 10) + "&user=" + UserHash(sub) +
		"&expires=" + strconv.FormatInt(expires.Unix(), 10) + "&"
}

// create is altcha-lib's createChallenge with a given salt and number: a
// salt without the trailing "&" gets one, as there.
func (k *Key) create(salt string, number, maxnumber int64) Challenge {
	if !strings.HasSuffix(salt, "&") {
		salt += "&"
	}
	challenge := hashHex(salt, strconv.FormatInt(number, 10))
	return Challenge{Algorithm: Algorithm, Challenge: challenge, MaxNumber: maxnumber, Salt: salt, Signature: k.sign(challenge)}
}

func hashHex(salt, number string) string {
	h := sha256.New()
	_, _ = io.WriteString(h, salt)
	_, _ = io.WriteString(h, number)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

func (k *Key) sign(challenge string) string {
	m := hmac.New(sha256.New, k.key)
	_, _ = io.WriteString(m, challenge)
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0]))
}

// payload is the solution's JSON. number stays raw: the digits the client
// sent are the digits that were hashed.
type payload struct {
	Algorithm string          `json:"algorithm"`
	Challenge string          `json:"challenge"`
	Number    json.RawMessage `json:"number"`
	Salt      string          `json:"salt"`
	Signature string          `json:"signature"`
}

// solution decodes and checks header as ALTCHA's verifySolution does, but
// for the expiry: the algorithm, the signature of the challenge (in
// constant time), and that salt+number hashes to the challenge.
func (k *Key) solution(header string) (payload, error) {
	var p payload
	if header == "" {
		return p, ErrMissing
	}
	if len(header) > maxPayload {
		return p, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxPayload)
	}
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(header); err != nil {
			return p, fmt.Errorf("%w: not base64", ErrMalformed)
		}
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("%w: not the JSON of a solution", ErrMalformed)
	}
	if p.Algorithm != Algorithm {
		return p, fmt.Errorf("%w: algorithm %q is not %s", ErrMalformed, p.Algorithm, Algorithm)
	}
	if !isNumber(p.Number) {
		return p, fmt.Errorf("%w: number must be a whole number", ErrMalformed)
	}
	if len(p.Challenge) != 2*sha256.Size || len(p.Signature) != 2*sha256.Size {
		return p, fmt.Errorf("%w: challenge and signature must be 64 hex digits", ErrMalformed)
	}
	if subtle.ConstantTimeCompare([]byte(k.sign(p.Challenge)), []byte(p.Signature)) != 1 {
		return p, ErrSignature
	}
	if subtle.ConstantTimeCompare([]byte(hashHex(p.Salt, string(p.Number))), []byte(p.Challenge)) != 1 {
		return p, ErrWrong
	}
	return p, nil
}

// isNumber reports whether raw is a JSON number that is a whole number
// without sign, exponent or fraction, at most 18 digits: what
// JSON.stringify writes for ALTCHA's numbers.
func isNumber(raw json.RawMessage) bool {
	if len(raw) == 0 || len(raw) > 18 || (raw[0] == '0' && len(raw) > 1) {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Verify checks a solution (the X-Seckill-Proof header: base64 of
// ALTCHA's payload JSON) for user sub on sale saleID at now. It keeps no
// state: the caller makes sure each Proof is used once.
func (k *Key) Verify(header string, saleID int64, sub string, now time.Time) (Proof, error) {
	p, err := k.solution(header)
	if err != nil {
		return Proof{}, err
	}
	b, err := parseSalt(p.Salt)
	if err != nil {
		return Proof{}, err
	}
	if b.sale != saleID {
		return Proof{}, ErrOtherSale
	}
	if subtle.ConstantTimeCompare([]byte(b.user), []byte(UserHash(sub))) != 1 {
		return Proof{}, ErrOtherUser
	}
	if now.After(b.expires) {
		return Proof{}, fmt.Errorf("%w at %s", ErrExpired, b.expires.UTC().Format(time.RFC3339))
	}
	return Proof{Challenge: p.Challenge, SaleID: b.sale, Expires: b.expires}, nil
}

// binding is what a seckill salt says.
type binding struct {
	sale    int64
	user    string
	expires time.Time
}

// parseSalt reads a salt Salt wrote: a hex prefix, "?", then sale, user
// and expires once each (in any order), each followed by "&". Anything
// else is malformed.
func parseSalt(salt string) (binding, error) {
	var b binding
	bad := func(why string) (binding, error) { return binding{}, fmt.Errorf("%w: salt %s", ErrMalformed, why) }
	random, query, ok := strings.Cut(salt, "?")
	if !ok || random == "" || !isHex(random) {
		return bad("has no random part")
	}
	if !strings.HasSuffix(query, "&") {
		return bad("does not end with &")
	}
	var haveSale, haveUser, haveExpires bool
	for _, kv := range strings.Split(query[:len(query)-1], "&") {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "sale" && !haveSale:
			id, err := strconv.ParseInt(value, 10, 64)
			if err != nil || id <= 0 || strconv.FormatInt(id, 10) != value {
				return bad("names no sale")
			}
			b.sale, haveSale = id, true
		case name == "user" && !haveUser:
			if len(value) != 2*userHashBytes || !isHex(value) {
				return bad("names no user")
			}
			b.user, haveUser = value, true
		case name == "expires" && !haveExpires:
			sec, err := strconv.ParseInt(value, 10, 64)
			if err != nil || sec <= 0 || strconv.FormatInt(sec, 10) != value {
				return bad("has no expiry")
			}
			b.expires, haveExpires = time.Unix(sec, 0), true
		default:
			return bad(fmt.Sprintf("has an unexpected parameter %q", name))
		}
	}
	if !haveSale || !haveUser || !haveExpires {
		return bad("lacks sale, user or expires")
	}
	return b, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
