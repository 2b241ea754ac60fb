package activities_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/warmup"
)

// losingDrawPass is the draw's Redis, which loses every key right after
// it queued one entrant, and is re-warmed by the worker (from the
// database, which has no row of that entrant yet) before the draw reads
// the entrant's place back (keepPlace's PlaceOf).
type losingDrawPass struct {
	*redisstore.Store
	t    *testing.T
	user string
	w    *warmup.Warmer
}

func (p *losingDrawPass) Join(ctx context.Context, saleID int64, userID string, item seckill.Item, maxEntries int, orderID int64, terms seckill.Terms) (seckill.JoinResult, error) {
	res, err := p.Store.Join(ctx, saleID, userID, item, maxEntries, orderID, terms)
	if err == nil && userID == p.user {
		p.user = ""
		require.NoError(p.t, p.Store.DropAll(ctx))
		_, err := p.w.Check(ctx)
		require.NoError(p.t, err)
		time.Sleep(warmup.Settle)
		rewarmed, err := p.w.Check(ctx)
		require.NoError(p.t, err)
		require.NotEmpty(p.t, rewarmed, "the worker re-warmed the sale")
	}
	return res, err
}

// Hostile review (issue 32, fifth): the fix of the fourth review's finding 1 (a buyer Redis
// lost between the join and the place read is not told 201) was made for
// the API's keepPlace only (ClaimOf: served or gone). The draw's keepPlace
// still reads "waits nowhere" as "served since" and saves nothing: an
// entrant queued, lost with Redis, and re-warmed (from rows that have no
// place for them yet) before PlaceOf is recorded WAITING, holding no
// order, in no line, with no row: GET /lobby/me tells them WAITING for good.
func TestSettleDraw_AnEntrantLostBetweenTheQueueAndThePlaceReadIsNotToldWaiting(t *testing.T) {
	r := newDrawRig(t, 2, 5)
	ctx := t.Context()
	r.rank(t)
	third, err := r.st.EntriesFrom(ctx, r.sale.ID, 3, 1)
	require.NoError(t, err)
	user := third[0].UserID
	lp := &losingDrawPass{Store: r.rs.ForDraw(), t: t, user: user,
		w: warmup.New(r.st, r.rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	var suite testsuite.WorkflowTestSuite
	r.env = suite.NewTestActivityEnvironment()
	r.acts = activities.New(r.st, r.rs, lp, devpay.Provider{Ledger: r.st}, &ids{}, 2)
	r.env.RegisterActivity(r.acts)
	// As SaleDraw runs it, each failed step retried (Temporal's policy).
	var p seckill.DrawProgress
	for tries := 0; !p.Done; tries++ {
		require.Less(t, tries, 10, "the draw never settled")
		v, err := r.env.ExecuteActivity(r.acts.SettleDraw, seckill.DrawStep{DrawInput: r.in, WaitlistFull: p.WaitlistFull, Ended: p.Ended})
		if err != nil {
			t.Logf("step failed, retried: %v", err)
			continue
		}
		require.NoError(t, v.Get(&p))
	}
	_, err = r.env.ExecuteActivity(r.acts.FinishDraw, r.in)
	require.NoError(t, err)
	require.Empty(t, lp.user, "the entrant was queued")

	e, err := r.st.LobbyEntryOf(ctx, r.sale.ID, user)
	require.NoError(t, err)
	ws, err := r.rs.WaitStateOf(ctx, r.sale.ID, user)
	require.NoError(t, err)
	claim, err := r.rs.ClaimOf(ctx, r.sale.ID, user)
	require.NoError(t, err)
	if e.Outcome == seckill.EntryWaiting && e.OrderID == 0 {
		require.True(t, ws.Waiting || ws.OrderID != 0 || claim != 0,
			"rank 3 is recorded WAITING (no order) but waits in no line and holds no claim: the draw took "+
				"\"waits nowhere\" for \"served\" after a Redis loss and re-warm (state %+v)", ws)
	}
}
