package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
)

// An API process paused past its order-id node's lease (a frozen VM or
// container) answers claims and waitlist joins 503, to be tried again,
// until its lease is confirmed again: it mints no id another process may
// mint too. The refusal costs the buyer nothing: their proof of work is
// still good after.
func TestClaim_UnavailableWhileTheIDNodeLeaseIsUnconfirmed(t *testing.T) {
	var paused atomic.Bool
	now := func() time.Time {
		if paused.Load() {
			return time.Now().Add(2 * time.Minute) // past the lease: no renewal ran meanwhile
		}
		return time.Now()
	}
	ids, err := idgen.New(context.Background(), testenv.RedisStore(t).IDNodes(), slog.New(slog.NewTextHandler(io.Discard, nil)), idgen.WithClock(now))
	require.NoError(t, err)
	r := newHandlerRig(t, api.Config{IDs: ids})
	saleID := r.createPoWSale(t, 10)
	proof, _ := solveChallenge(t, r.challengeFor(t, saleID, "ann"))
	withProof := map[string]string{api.HeaderProof: proof}

	paused.Store(true)
	for _, path := range []string{claimsPath(saleID), "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"} {
		a := r.post(t, path, "ann", withProof)
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s: %v", path, a.body)
		require.Equal(t, "UNAVAILABLE", a.code())
		require.NotEmpty(t, a.header.Get("Retry-After"))
	}

	paused.Store(false) // the lease is confirmed again
	a := r.post(t, claimsPath(saleID), "ann", withProof)
	require.Equal(t, http.StatusAccepted, a.status, "the same proof admits: %v", a.body)
}
