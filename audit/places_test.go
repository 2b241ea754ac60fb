package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// Invariant 10 (hostile review R5): a waiting buyer whose row keeps
// another place (or variant, or quantity) than Redis' line would be moved
// by the next Redis loss; the audit fails it. So does a waiting buyer with
// no row at all: a join writes its row, pending, before Redis puts the
// buyer in line, so no row is a row lost. A pending row is not counted (a
// join answered 503, or whose API stopped before the place was filled,
// was never answered 201: see placesKept).
func TestRun_FailsAWaitingBuyerWhosePlaceTheDatabaseDoesNotKeep(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 1)
	admit(t, st, rs, sale, "ann", 1001, seckill.DefaultItem)
	j, err := rs.Join(ctx, sale.ID, "bob", seckill.DefaultItem, 10, 2001, termsOf(t, sale, seckill.DefaultSKU))
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)

	rep := audited(t, st, rs, sale)
	require.Equal(t, int64(1), rep.Waiting)
	require.Contains(t, failed(rep), 10, "bob waits with no row:\n%s", rep)

	require.NoError(t, st.PendWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		JoinedAt: time.Now()}))
	rep = audited(t, st, rs, sale)
	require.NotContains(t, failed(rep), 10, "bob's join is in flight (his row is pending):\n%s", rep)

	place, ok, err := rs.PlaceOf(ctx, sale.ID, "bob")
	require.NoError(t, err)
	require.True(t, ok)
	place.OrderID, place.JoinedAt = 3001, time.Now()
	kept, err := st.FillWaitlistEntry(ctx, place)
	require.NoError(t, err)
	require.True(t, kept)
	rep = audited(t, st, rs, sale)
	require.NotContains(t, failed(rep), 10, "bob's place is kept:\n%s", rep)

	require.NoError(t, st.Gorm().Exec(`UPDATE waitlist_entries SET place = place + 7 WHERE sale_id = ? AND user_id = 'bob'`, sale.ID).Error)
	rep = audited(t, st, rs, sale)
	require.Contains(t, failed(rep), 10, "the row keeps another place:\n%s", rep)

	require.NoError(t, st.Gorm().Exec(`UPDATE waitlist_entries SET place = place - 7, quantity = 2 WHERE sale_id = ? AND user_id = 'bob'`, sale.ID).Error)
	rep = audited(t, st, rs, sale)
	require.Contains(t, failed(rep), 10, "the row keeps another quantity:\n%s", rep)
}

// join puts userID in sale's line for item as the API does: their
// pending row, Redis, then the place filled in the row (invariant 10).
func join(t *testing.T, st *store.Store, rs *redisstore.Store, sale *seckill.Sale, userID string, item seckill.Item) seckill.JoinResult {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, st.PendWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: userID, Item: item, JoinedAt: time.Now()}))
	j, err := rs.Join(ctx, sale.ID, userID, item, 10, 0, termsOf(t, sale, item.SKU))
	require.NoError(t, err)
	if j.Outcome != seckill.Waiting {
		require.NoError(t, st.DropPendingWaitlistEntry(ctx, sale.ID, userID))
		return j
	}
	place, ok, err := rs.PlaceOf(ctx, sale.ID, userID)
	require.NoError(t, err)
	require.True(t, ok)
	place.OrderID = 9000 + int64(len(userID))
	place.JoinedAt = time.Now()
	kept, err := st.FillWaitlistEntry(ctx, place)
	require.NoError(t, err)
	require.True(t, kept)
	return j
}

// The draw queues a batch's entrants and saves their places with the
// batch: an entrant of the draw in progress, not yet settled, waits
// without a row and breaks nothing; once the draw has settled past them
// (or for a buyer who is not its entrant) a missing row fails invariant
// 10 (hostile review).
func TestRun_ADrawsBatchBeingSettledWaitsWithoutRowsMeanwhile(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 1, "ann", "bob"))
	testenv.Warm(t, rs, sale, 1)
	admit(t, st, rs, sale, "ann", 1001, seckill.DefaultItem)
	j, err := rs.ForDraw().Join(ctx, sale.ID, "bob", seckill.DefaultItem, 10, 2001, termsOf(t, sale, seckill.DefaultSKU))
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET rank = CASE user_id WHEN 'ann' THEN 1 ELSE 2 END WHERE sale_id = ?`, sale.ID).Error)
	require.NoError(t, st.MarkRanked(ctx, sale.ID, 2, 2))

	rep := audited(t, st, rs, sale)
	require.NotContains(t, failed(rep), 10, "bob's batch is being settled:\n%s", rep)

	require.NoError(t, st.Gorm().Exec(`UPDATE sales SET draw_next_rank = 3 WHERE id = ?`, sale.ID).Error)
	rep = audited(t, st, rs, sale)
	require.Contains(t, failed(rep), 10, "the draw settled past bob, whose place no row keeps:\n%s", rep)
}
