package redisstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// A renewal of an id node counts only once the replicas hold it, as a
// take does: idgen trusts the lease from when it sent a renewal granted,
// and one a failover lost would let the node go earlier than that.
func TestIDNodes_ARenewalCountsOnlyOnceTheReplicasHoldIt(t *testing.T) {
	st := testenv.RedisStore(t)
	ctx := t.Context()
	took, err := st.IDNodes().Take(ctx, 5, "me", time.Minute)
	require.NoError(t, err)
	require.True(t, took)
	waiting := st.WithReplicas(1, 20*time.Millisecond).IDNodes()

	_, err = waiting.Renew(ctx, 5, "me", time.Minute)
	require.ErrorIs(t, err, redisstore.ErrNotReplicated, "this Redis has no replica")
	held, err := waiting.Renew(ctx, 5, "another process", time.Minute)
	require.NoError(t, err, "a renewal refused wrote nothing to wait for")
	require.False(t, held)
}
