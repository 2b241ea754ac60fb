package redisstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/pow"
	"github.com/seckill/seckill/redisstore"
)

const challengeHex = "0c9d86db01f2e6bf64e29016b435b72a1079ddbc978edb7dd0114e03921abf35"

// A proof of work counts once, however many requests race with it; its
// record lives until the challenge's expiry (plus the grace), under the
// sale's hash tag.
func TestUseProof_CountsOnce(t *testing.T) {
	rs := testenv.RedisStore(t)
	ctx := context.Background()
	expires := time.Now().Add(5 * time.Minute).Truncate(time.Second)

	var firsts atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			use, err := rs.UseProof(ctx, 42, "alice", challengeHex, expires, "")
			require.NoError(t, err)
			if use == seckill.ProofTaken {
				firsts.Add(1)
			} else {
				require.Equal(t, seckill.ProofUsed, use)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, firsts.Load(), "one of 32 racing uses counts")

	key, err := rs.ProofKey(ctx, 42, "alice", challengeHex)
	require.NoError(t, err)
	require.Contains(t, key, ":{s42}:pow:")
	require.True(t, strings.HasSuffix(key, challengeHex[:32]))
	at, err := rs.Client().ExpireTime(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, expires.Add(redisstore.ProofGrace).Unix(), int64(at/time.Second), "kept until the expiry plus the grace")

	// Another challenge, another sale: their own records.
	use, err := rs.UseProof(ctx, 42, "alice", strings.Repeat("ab", 32), expires, "")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofTaken, use)
	use, err = rs.UseProof(ctx, 43, "alice", challengeHex, expires, "")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofTaken, use)
}

// A request retried under the same Idempotency-Key may show its proof
// again; nothing else may.
func TestUseProof_ARetryOfTheSameRequest(t *testing.T) {
	rs := testenv.RedisStore(t)
	ctx := context.Background()
	expires := time.Now().Add(time.Minute)
	use, err := rs.UseProof(ctx, 7, "bob", challengeHex, expires, "key-1")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofTaken, use)
	use, err = rs.UseProof(ctx, 7, "bob", challengeHex, expires, "key-1")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofRetried, use, "the same request again")
	for _, retry := range []string{"key-2", ""} {
		use, err = rs.UseProof(ctx, 7, "bob", challengeHex, expires, retry)
		require.NoError(t, err)
		require.Equal(t, seckill.ProofUsed, use, "retry %q", retry)
	}
	// Used without a key first: no retry takes it.
	use, err = rs.UseProof(ctx, 7, "bob", strings.Repeat("cd", 32), expires, "")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofTaken, use)
	use, err = rs.UseProof(ctx, 7, "bob", strings.Repeat("cd", 32), expires, "1")
	require.NoError(t, err)
	require.Equal(t, seckill.ProofUsed, use, "a retry tag never matches a use without one")

	// A key that ends as a used proof's mark is marked ("*") is another
	// request: the proof taken under "k*" does not buy "k" a decision.
	for _, pair := range [][2]string{{"k*", "k"}, {"k**", "k*"}} {
		challenge := strconv.Itoa(len(pair[0])) + strings.Repeat("a", 63) // 128 bits name a proof: they differ first
		use, err = rs.UseProof(ctx, 7, "bob", challenge, expires, pair[0])
		require.NoError(t, err)
		require.Equal(t, seckill.ProofTaken, use)
		use, err = rs.UseProof(ctx, 7, "bob", challenge, expires, pair[1])
		require.NoError(t, err)
		require.Equal(t, seckill.ProofUsed, use, "taken under %q, shown under %q", pair[0], pair[1])
	}
}

// A proof given back counts again; only the record of the use that took
// it is given back (the same retry tag), never another's.
func TestGiveProofBack_OnlyTheUseThatTookIt(t *testing.T) {
	rs := testenv.RedisStore(t)
	ctx := context.Background()
	expires := time.Now().Add(time.Minute)
	for _, retry := range []string{"", "key-1"} {
		challenge := strconv.Itoa(len(retry)) + strings.Repeat("e", 63) // 128 bits name a proof: they differ first
		use, err := rs.UseProof(ctx, 8, "carl", challenge, expires, retry)
		require.NoError(t, err)
		require.Equal(t, seckill.ProofTaken, use)

		other := "key-2"
		if retry != "" {
			other = ""
		}
		require.NoError(t, rs.GiveProofBack(ctx, 8, "carl", challenge, other))
		use, err = rs.UseProof(ctx, 8, "carl", challenge, expires, other)
		require.NoError(t, err)
		require.Equal(t, seckill.ProofUsed, use, "another use's give-back leaves it (retry %q)", retry)

		require.NoError(t, rs.GiveProofBack(ctx, 8, "carl", challenge, retry))
		use, err = rs.UseProof(ctx, 8, "carl", challenge, expires, other)
		require.NoError(t, err)
		require.Equal(t, seckill.ProofTaken, use, "given back, it counts again (retry %q)", retry)
	}
	// Giving back a proof nobody holds does nothing.
	require.NoError(t, rs.GiveProofBack(ctx, 8, "carl", strings.Repeat("f", 64), ""))
}

// On a sale of several stock segments the record sits in the buyer's
// segment's slot, as their claims do.
func TestUseProof_InTheBuyersSegment(t *testing.T) {
	rs := testenv.RedisStore(t)
	ctx := context.Background()
	rs.KnowSegments(9, 4)
	slots := map[uint16]bool{}
	for i := range 64 {
		user := "u" + strconv.Itoa(i)
		key, err := rs.ProofKey(ctx, 9, user, challengeHex)
		require.NoError(t, err)
		claims, err := rs.ClaimsKeyOf(ctx, 9, user)
		require.NoError(t, err)
		require.Equal(t, redisstore.SlotOf(claims), redisstore.SlotOf(key), user)
		slots[redisstore.SlotOf(key)] = true
	}
	require.Len(t, slots, 4, "spread over the sale's four segments")
}

// BenchmarkUseProof is the single-use record's cost: one SET NX round
// trip to the test Redis.
func BenchmarkUseProof(b *testing.B) {
	rs := testenv.RedisStore(b)
	ctx := context.Background()
	expires := time.Now().Add(5 * time.Minute)
	i := 0
	for b.Loop() {
		i++
		use, err := rs.UseProof(ctx, 1, "bench", strconv.Itoa(i)+challengeHex, expires, "")
		if err != nil || use != seckill.ProofTaken {
			b.Fatal(use, err)
		}
	}
}

// BenchmarkVerifyAndUseProof is what the API spends on a claim's proof
// of work: pow.Verify (base64, JSON, one HMAC, two SHA-256) and the
// single-use record, one distinct solution per request.
func BenchmarkVerifyAndUseProof(b *testing.B) {
	rs := testenv.RedisStore(b)
	ctx := context.Background()
	key := pow.NewKey(pow.DeriveKey([]byte("whsec_bench")))
	now := time.Now()
	const sub = "auth0|5f3c8d2e9b1a4c0012345678"
	headers := make([]string, b.N)
	for i := range headers {
		c, err := key.Issue(123456789, sub, 1, pow.Expiry(now, now)) // difficulty 1: solved in two tries
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; ; n++ {
			sum := sha256.Sum256([]byte(c.Salt + strconv.Itoa(n)))
			if hex.EncodeToString(sum[:]) == c.Challenge {
				raw, _ := json.Marshal(map[string]any{"algorithm": c.Algorithm, "challenge": c.Challenge, "number": n,
					"salt": c.Salt, "signature": c.Signature, "took": 120})
				headers[i] = base64.StdEncoding.EncodeToString(raw)
				break
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := key.Verify(headers[i], 123456789, sub, now)
		if err != nil {
			b.Fatal(err)
		}
		use, err := rs.UseProof(ctx, p.SaleID, sub, p.Challenge, p.Expires, "")
		if err != nil || use != seckill.ProofTaken {
			b.Fatal(use, err)
		}
	}
}
