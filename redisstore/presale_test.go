package redisstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// member are the terms of a buyer whose token carries the presale's claim.
var member = func() seckill.Terms { t := terms; t.Member = true; return t }()

// inPresale is a sale of units that starts in an hour, its presale open
// since a minute ago, over segments.
func inPresale(units int64, segments int) seckill.WarmSpec {
	now := time.Now()
	spec := openSale(units)
	spec.StartsAt, spec.PresaleStartsAt, spec.Segments = now.Add(time.Hour), now.Add(-time.Minute), segments
	return spec
}

func claimAs(t *testing.T, sc *redisstore.Store, tm seckill.Terms, user string, orderID int64, idemKey string) seckill.Outcome {
	t.Helper()
	res, err := sc.Claim(t.Context(), saleID, user, orderID, idemKey, tm, seckill.DefaultItem)
	require.NoError(t, err)
	return res.Outcome
}

func joinAs(t *testing.T, sc *redisstore.Store, tm seckill.Terms, user string, orderID int64) seckill.Outcome {
	t.Helper()
	res, err := sc.Join(t.Context(), saleID, user, seckill.DefaultItem, 10, orderID, tm)
	require.NoError(t, err)
	return res.Outcome
}

// During the presale the scripts admit members (on Redis' clock) and hold
// everyone else back with SALE_NOT_STARTED, even once the members have
// bought every unit: a non-member never learns SOLD_OUT before the start.
func TestPresale_MembersClaimAndJoinFromItsStartOthersWaitForTheSale(t *testing.T) {
	t.Parallel()
	for _, segments := range []int{1, 3} {
		sc := testenv.RedisStore(t)
		warm(t, sc, inPresale(2, segments))

		require.Equal(t, seckill.SaleNotStarted, claimAs(t, sc, terms, "pat", 1, ""), "segments %d", segments)
		require.Equal(t, seckill.SaleNotStarted, claimAs(t, sc, terms, "pat", 2, "k1"), "with an Idempotency-Key too")
		require.Equal(t, seckill.SaleNotStarted, joinAs(t, sc, terms, "pat", 3))
		require.Equal(t, seckill.Admitted, claimAs(t, sc, member, "vic", 4, ""))
		require.Equal(t, seckill.Admitted, joinAs(t, sc, member, "val", 5), "a member's join takes a unit in stock")
		require.Equal(t, seckill.SoldOut, claimAs(t, sc, member, "vera", 6, ""))
		require.Equal(t, seckill.Waiting, joinAs(t, sc, member, "vera", 7))
		require.Equal(t, seckill.SaleNotStarted, claimAs(t, sc, terms, "pat", 8, ""), "not SOLD_OUT: the sale has not started for them")
		require.Equal(t, seckill.SaleNotStarted, joinAs(t, sc, terms, "pat", 9))
	}
}

func TestPresale_NobodyClaimsBeforeThePresaleStarts(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	spec := inPresale(5, 1)
	spec.PresaleStartsAt = time.Now().Add(30 * time.Minute)
	warm(t, sc, spec)

	require.Equal(t, seckill.SaleNotStarted, claimAs(t, sc, member, "vic", 1, ""))
	require.Equal(t, seckill.SaleNotStarted, joinAs(t, sc, member, "vic", 2))
}

// A sale without a presale: saying "member" opens nothing early.
func TestPresale_AMemberOfNoPresaleWaitsForTheStart(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	spec := inPresale(5, 1)
	spec.PresaleStartsAt = time.Time{}
	warm(t, sc, spec)

	require.Equal(t, seckill.SaleNotStarted, claimAs(t, sc, member, "vic", 1, ""))
	require.Equal(t, seckill.SaleNotStarted, joinAs(t, sc, member, "vic", 2))
}

// A re-warm after Redis lost the sale loads its presale again.
func TestPresale_RewarmKeepsThePresale(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)

	loaded, err := sc.Rewarm(t.Context(), inPresale(3, 2), nil)
	require.NoError(t, err)
	require.True(t, loaded)

	require.Equal(t, seckill.Admitted, claimAs(t, sc, member, "vic", 1, ""))
	require.Equal(t, seckill.SaleNotStarted, claimAs(t, sc, terms, "pat", 2, ""))
}
