package pow

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vectors are testdata/altcha-v1.json: challenges made and solutions
// found by ALTCHA's own server library (altcha-lib, npm; the version is in
// the file, and how to make it again in testdata/altcha-vectors.mjs).
type vectors struct {
	Generator  string `json:"generator"`
	HMACKey    string `json:"hmac_key"`
	Challenges []struct {
		Name      string            `json:"name"`
		SaltIn    string            `json:"salt_in"`
		Params    map[string]string `json:"params"`
		Expires   int64             `json:"expires"`
		Number    int64             `json:"number"`
		MaxNumber int64             `json:"maxnumber"`
		Challenge
	} `json:"challenges"`
	Solutions []struct {
		Name            string `json:"name"`
		Payload         string `json:"payload"`
		Number          int64  `json:"number"`
		Valid           bool   `json:"valid"`
		TamperedPayload string `json:"tampered_payload"`
		TamperedValid   bool   `json:"tampered_valid"`
		WrongKeyValid   bool   `json:"wrong_key_valid"`
	} `json:"solutions"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/altcha-v1.json")
	require.NoError(t, err)
	var v vectors
	require.NoError(t, json.Unmarshal(raw, &v))
	require.Contains(t, v.Generator, "altcha-lib")
	require.NotEmpty(t, v.Challenges)
	require.NotEmpty(t, v.Solutions)
	return v
}

// solve finds the number of c by brute force, as a client does.
func solve(t testing.TB, c Challenge) int64 {
	t.Helper()
	for n := int64(0); n <= c.MaxNumber; n++ {
		if hashHex(c.Salt, strconv.FormatInt(n, 10)) == c.Challenge {
			return n
		}
	}
	t.Fatalf("no number solves %s", c.Challenge)
	return 0
}

// header is the X-Seckill-Proof of number for c: base64 of the JSON
// ALTCHA's widget sends.
func header(c Challenge, number any) string {
	b, _ := json.Marshal(map[string]any{"algorithm": c.Algorithm, "challenge": c.Challenge, "number": number,
		"salt": c.Salt, "signature": c.Signature, "took": 42})
	return base64.StdEncoding.EncodeToString(b)
}

// Challenges made with the same salt, number and key are byte for byte
// altcha-lib's, salt included (its trailing "&"), for plain salts and for
// seckill's salt with its sale, user and expiry.
func TestVectors_ChallengesAreAltchaLibs(t *testing.T) {
	v := loadVectors(t)
	k := NewKey([]byte(v.HMACKey))
	for _, c := range v.Challenges {
		salt := c.SaltIn
		if len(c.Params) > 0 {
			sale, err := strconv.ParseInt(c.Params["sale"], 10, 64)
			require.NoError(t, err)
			// Salt names the user by the hash of a sub; the vectors
			// carry the hash itself.
			salt = strings.Replace(Salt(c.SaltIn, sale, "", time.Unix(c.Expires, 0)), "user="+UserHash(""), "user="+c.Params["user"], 1)
		}
		got := k.create(salt, c.Number, c.MaxNumber)
		require.Equal(t, c.Challenge.Challenge, got.Challenge, c.Name)
		require.Equal(t, c.Salt, got.Salt, c.Name)
		require.Equal(t, c.Signature, got.Signature, c.Name)
		require.Equal(t, c.Algorithm, got.Algorithm, c.Name)
		require.Equal(t, c.MaxNumber, got.MaxNumber, c.Name)
	}
}

// The vectors' user hash is UserHash's: "8c6976e5b5410415" is the first 8
// bytes of SHA-256("admin").
func TestVectors_UserHash(t *testing.T) {
	require.Equal(t, "8c6976e5b5410415", UserHash("admin"))
	require.Len(t, UserHash(strings.Repeat("~", 255)), 16)
}

// Solutions altcha-lib's solveChallenge found, in the payload its widget
// sends, are accepted; the ones it refused are refused.
func TestVectors_SolutionsFromAltchaLib(t *testing.T) {
	v := loadVectors(t)
	k := NewKey([]byte(v.HMACKey))
	for _, s := range v.Solutions {
		require.True(t, s.Valid, s.Name)
		p, err := k.solution(s.Payload)
		require.NoError(t, err, s.Name)
		require.Equal(t, strconv.FormatInt(s.Number, 10), string(p.Number), s.Name)
		_, err = k.solution(s.TamperedPayload)
		require.False(t, s.TamperedValid)
		require.ErrorIs(t, err, ErrWrong, s.Name)
		_, err = NewKey([]byte(v.HMACKey + "x")).solution(s.Payload)
		require.False(t, s.WrongKeyValid)
		require.ErrorIs(t, err, ErrSignature, s.Name)
	}
	// seckill's own salt: Verify accepts altcha-lib's solution for the
	// sale and user it names, before it expires.
	for _, s := range v.Solutions {
		if s.Name != "seckill salt" {
			continue
		}
		// The vector's user is 8c6976e5b5410415, UserHash("admin").
		proof, err := k.Verify(s.Payload, 42, "admin", time.Unix(1767225600, 0))
		require.NoError(t, err)
		require.Equal(t, int64(42), proof.SaleID)
		require.Equal(t, time.Unix(1767225600, 0), proof.Expires)
		_, err = k.Verify(s.Payload, 42, "admin", time.Unix(1767225601, 0))
		require.ErrorIs(t, err, ErrExpired)
		_, err = k.Verify(s.Payload, 43, "admin", time.Unix(1767225600, 0))
		require.ErrorIs(t, err, ErrOtherSale)
		_, err = k.Verify(s.Payload, 42, "root", time.Unix(1767225600, 0))
		require.ErrorIs(t, err, ErrOtherUser)
		return
	}
	t.Fatal("no vector for seckill's salt")
}

// A published vector: altcha-lib-go's v1 test names SHA-256("salt123").
func TestVectors_AltchaLibGoHash(t *testing.T) {
	require.Equal(t, "c2fc6c6adf8ba0f575a35f48df52c0968a3dcd3c577c2769dc2f1035943b975e", hashHex("salt", "123"))
}

func TestIssue_ThenVerifyOnce(t *testing.T) {
	k := NewKey([]byte("test-key"))
	now := time.Now()
	startsAt := now.Add(time.Hour)
	exp := Expiry(startsAt, now)
	require.Equal(t, startsAt.Add(Validity).Unix(), exp.Unix(), "5 minutes after the start when that is later")
	require.Equal(t, now.Add(Validity).Unix(), Expiry(now.Add(-time.Hour), now).Unix(), "5 minutes from issue when that is later")

	c, err := k.Issue(42, "auth0|5f3c", 2000, exp)
	require.NoError(t, err)
	require.Equal(t, Algorithm, c.Algorithm)
	require.Equal(t, int64(2000), c.MaxNumber)
	require.Regexp(t, `^[0-9a-f]{24}\?sale=42&user=[0-9a-f]{16}&expires=\d+&$`, c.Salt)
	require.NotContains(t, c.Salt, "auth0", "the sub is never in the salt")
	n := solve(t, c)
	require.LessOrEqual(t, n, int64(2000))

	proof, err := k.Verify(header(c, n), 42, "auth0|5f3c", now)
	require.NoError(t, err)
	require.Equal(t, c.Challenge, proof.Challenge)
	require.Equal(t, exp, proof.Expires)
	_, err = k.Verify(header(c, n), 42, "auth0|5f3c", exp)
	require.NoError(t, err, "valid through its expiry second")
	_, err = k.Verify(header(c, n), 42, "auth0|5f3c", exp.Add(time.Millisecond))
	require.ErrorIs(t, err, ErrExpired)
	// A raw (unpadded) base64 is accepted too.
	_, err = k.Verify(strings.TrimRight(header(c, n), "="), 42, "auth0|5f3c", now)
	require.NoError(t, err)
}

// The numbers are drawn from the whole of [0, maxnumber].
func TestIssue_NumbersSpanTheRange(t *testing.T) {
	k := NewKey([]byte("k"))
	var low, high bool
	for range 200 {
		c, err := k.Issue(1, "u", 3, time.Now())
		require.NoError(t, err)
		n := solve(t, c)
		low, high = low || n == 0, high || n == 3
	}
	require.True(t, low && high, "0 and maxnumber both occur")
	_, err := k.Issue(1, "u", 0, time.Now())
	require.Error(t, err)
}

func TestVerify_RefusesEachWrongProofForItsReason(t *testing.T) {
	k := NewKey([]byte("test-key"))
	now := time.Now()
	var (
		c Challenge
		n int64
	)
	for { // a number that splice can use
		var err error
		c, err = k.Issue(7, "alice", 1000, Expiry(now, now))
		require.NoError(t, err)
		if n = solve(t, c); n >= 10 && strconv.FormatInt(n, 10)[1] != '0' {
			break
		}
	}
	good := header(c, n)
	_, err := k.Verify(good, 7, "alice", now)
	require.NoError(t, err)

	mutate := func(f func(m map[string]any)) string {
		raw, _ := base64.StdEncoding.DecodeString(good)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		f(m)
		b, _ := json.Marshal(m)
		return base64.StdEncoding.EncodeToString(b)
	}
	other, err := NewKey([]byte("another-key")).Issue(7, "alice", 1000, Expiry(now, now))
	require.NoError(t, err)
	otherSale, err := k.Issue(8, "alice", 1000, Expiry(now, now))
	require.NoError(t, err)

	cases := []struct {
		name   string
		header string
		want   error
	}{
		{"missing", "", ErrMissing},
		{"not base64", "!!!", ErrMalformed},
		{"not JSON", base64.StdEncoding.EncodeToString([]byte("nope")), ErrMalformed},
		{"too long", strings.Repeat("A", 4096), ErrMalformed},
		{"other algorithm", mutate(func(m map[string]any) { m["algorithm"] = "SHA-512" }), ErrMalformed},
		{"number as a string", mutate(func(m map[string]any) { m["number"] = strconv.FormatInt(n, 10) }), ErrMalformed},
		{"negative number", mutate(func(m map[string]any) { m["number"] = -1 }), ErrMalformed},
		{"fractional number", mutate(func(m map[string]any) { m["number"] = 1.5 }), ErrMalformed},
		{"tampered number", mutate(func(m map[string]any) { m["number"] = n + 1 }), ErrWrong},
		{"tampered signature", mutate(func(m map[string]any) { m["signature"] = strings.Repeat("0", 64) }), ErrSignature},
		{"tampered challenge", mutate(func(m map[string]any) { m["challenge"] = strings.Repeat("a", 64) }), ErrSignature},
		{"tampered salt", mutate(func(m map[string]any) { m["salt"] = strings.Replace(c.Salt, "sale=7", "sale=8", 1) }), ErrWrong},
		// altcha-lib-go's splicing case: a digit moved from the number to
		// the salt keeps the hash, and is refused by the salt's form.
		{"spliced", splice(t, c, n), ErrMalformed},
		{"another key's challenge", header(other, solve(t, other)), ErrSignature},
		{"another sale", header(otherSale, solve(t, otherSale)), ErrOtherSale},
	}
	for _, tc := range cases {
		_, err := k.Verify(tc.header, 7, "alice", now)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	_, err = k.Verify(good, 7, "bob", now)
	require.ErrorIs(t, err, ErrOtherUser)
	_, err = k.Verify(good, 7, "alice", now.Add(Validity+time.Second))
	require.ErrorIs(t, err, ErrExpired)
}

// splice moves the first digit of the number to the end of the salt: the
// same bytes are hashed (and so signed), but the salt no longer ends in
// "&". (n must have two digits or more, the second not 0.)
func splice(t *testing.T, c Challenge, n int64) string {
	t.Helper()
	digits := strconv.FormatInt(n, 10)
	require.True(t, len(digits) >= 2 && digits[1] != '0', "cannot splice %d", n)
	rest, _ := strconv.ParseInt(digits[1:], 10, 64)
	require.Equal(t, c.Challenge, hashHex(c.Salt+digits[:1], digits[1:]), "the same bytes are hashed")
	return header(Challenge{Algorithm: c.Algorithm, Challenge: c.Challenge, Salt: c.Salt + digits[:1], Signature: c.Signature}, rest)
}

func TestParseSalt_ReadsItsBindingAndRefusesAnyOtherForm(t *testing.T) {
	good := Salt("0a1b", 5, "u", time.Unix(1700000000, 0))
	b, err := parseSalt(good)
	require.NoError(t, err)
	require.Equal(t, binding{sale: 5, user: UserHash("u"), expires: time.Unix(1700000000, 0)}, b)
	// Any order of the three parameters.
	b, err = parseSalt("ff?expires=1700000000&user=" + UserHash("u") + "&sale=5&")
	require.NoError(t, err)
	require.Equal(t, int64(5), b.sale)
	for _, bad := range []string{
		"", "?sale=5&", "0a1b", "XYZ?sale=5&user=" + UserHash("u") + "&expires=1&",
		strings.TrimSuffix(good, "&"), good + "1", good + "x=1&",
		"0a1b?sale=5&sale=6&user=" + UserHash("u") + "&expires=1&",
		"0a1b?sale=05&user=" + UserHash("u") + "&expires=1&",
		"0a1b?sale=5&user=abc&expires=1&",
		"0a1b?sale=5&user=" + UserHash("u") + "&expires=-1&",
		"0a1b?sale=5&user=" + UserHash("u") + "&",
	} {
		_, err := parseSalt(bad)
		require.ErrorIs(t, err, ErrMalformed, bad)
	}
}

func TestDeriveKey_EveryReplicaDerivesTheSameKeyAndNoSecretShows(t *testing.T) {
	a := DeriveKey([]byte("whsec_one"))
	require.Len(t, a, 64)
	require.Equal(t, a, DeriveKey([]byte("whsec_one")), "every replica derives the same")
	require.False(t, bytes.Equal(a, DeriveKey([]byte("whsec_two"))))
	require.False(t, bytes.Contains(a, []byte("whsec")))
}

// BenchmarkVerify is the API's cost per proof, without the single-use
// record (redisstore's BenchmarkUseProof is that).
func BenchmarkVerify(b *testing.B) {
	k := NewKey(DeriveKey([]byte("whsec_bench")))
	now := time.Now()
	sub := "auth0|5f3c8d2e9b1a4c0012345678"
	c, err := k.Issue(123456789012345, sub, 1000, Expiry(now, now))
	if err != nil {
		b.Fatal(err)
	}
	h := header(c, solve(b, c))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(h, 123456789012345, sub, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNativeHash is a script's cost per try, in Go on one core: what
// a difficulty costs an attacker who does not use a browser
// (docs/FAIR-START.md, "Proof of work").
func BenchmarkNativeHash(b *testing.B) {
	salt := []byte(Salt("0123456789abcdef01234567", 42, "bench", time.Unix(1767225600, 0)))
	buf := make([]byte, 0, len(salt)+20)
	var n int64
	for b.Loop() {
		buf = strconv.AppendInt(append(buf[:0], salt...), n, 10)
		sum := sha256.Sum256(buf)
		if sum[0] == 0 && sum[1] == 0 && sum[2] == 0 && sum[3] == 0 && sum[4] == 0 {
			b.Log(n)
		}
		n++
	}
}
