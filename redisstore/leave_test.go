package redisstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// Review finding R3: a leave while the sale's keys are lost (before the
// re-warm has run, or while it runs) was answered 204: the API deleted the
// row and Leave found no line and no error. A re-warm that had read the
// rows before the delete (warmup: WaitlistEntries, then RewarmRebuilding)
// put the buyer back in the line they left. Leave now refuses while the
// buyer's segment is not loaded (the API answers 503), and the retry once
// it is loaded takes them out for good.
func TestLeave_WhileTheSalesKeysAreLostIsRefusedSoTheRebuildCannotUndoIt(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSale(1)
	warm(t, sc, spec)
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	rows := []seckill.WaitlistEntry{joinItem(t, sc, "bob", seckill.DefaultItem, 3001)}
	wipe(t, sc)
	// The re-warmer has read bob's row (store.WaitlistEntries). bob leaves:
	// the API deletes his row, then asks Redis, which cannot tell yet.
	_, err := sc.Leave(ctx, saleID, "bob")
	require.ErrorIs(t, err, redisstore.ErrNotWarmed)
	spec.Variants[0].Units = 0
	rebuild(t, sc, spec, []seckill.ActiveClaim{{UserID: "ann", OrderID: 1001, Item: seckill.DefaultItem}}, rows)
	require.True(t, waitState(t, sc, "bob").Waiting, "the rebuild read bob's row before he left")
	// His retry (the API answered 503) takes him out for good.
	left, err := sc.Leave(ctx, saleID, "bob")
	require.NoError(t, err)
	require.True(t, left)
	require.Equal(t, seckill.WaitState{}, waitState(t, sc, "bob"))
}
