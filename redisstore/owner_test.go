package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

func knows(ids ...int64) func(context.Context, int64) (bool, error) {
	return func(_ context.Context, id int64) (bool, error) {
		for _, k := range ids {
			if k == id {
				return true, nil
			}
		}
		return false, nil
	}
}

func TestClaimPrefix_OneInstallationPerPrefix(t *testing.T) {
	sc := testenv.RedisStore(t)
	ctx := t.Context()

	require.NoError(t, sc.ClaimPrefix(ctx, "id-a", "database a", knows()))
	require.NoError(t, sc.ClaimPrefix(ctx, "id-a", "database a", knows()), "its owner may start again")

	err := sc.ClaimPrefix(ctx, "id-b", "database b", knows())
	var taken *redisstore.PrefixTakenError
	require.True(t, errors.As(err, &taken), "%v", err)
	require.Contains(t, err.Error(), "SECKILL_REDIS_PREFIX")
	require.Contains(t, err.Error(), "id-a, database a", "names the owner")
}

func TestClaimPrefix_KeysOfAnUnrecordedInstallation(t *testing.T) {
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now()
	_, err := sc.Warm(ctx, seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 1}}, StartsAt: now, EndsAt: now.Add(time.Hour)})
	require.NoError(t, err)

	err = sc.ClaimPrefix(ctx, "id-b", "database b", knows(7))
	var taken *redisstore.PrefixTakenError
	require.True(t, errors.As(err, &taken), "sale %d is not this database's: %v", saleID, err)

	require.NoError(t, sc.ClaimPrefix(ctx, "id-a", "database a", knows(saleID)), "an installation from before owners were recorded keeps its keys")
	require.Error(t, sc.ClaimPrefix(ctx, "id-b", "database b", knows(saleID)))
}

func TestCheckPrefix_ReadsAndNeverTakes(t *testing.T) {
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	err := sc.CheckPrefix(ctx, "id-a")
	require.ErrorContains(t, err, "no seckill installation has run on the Redis key prefix")
	require.ErrorContains(t, err, "SECKILL_REDIS_PREFIX and REDIS_URL")
	require.NoError(t, sc.ClaimPrefix(ctx, "id-b", "database b", knows()), "checking took nothing")

	require.NoError(t, sc.CheckPrefix(ctx, "id-b"))
	var taken *redisstore.PrefixTakenError
	require.True(t, errors.As(sc.CheckPrefix(ctx, "id-a"), &taken))
}
