package store_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// rankedLobby is a closed lobby of n entries of which the first through
// ranks are written from Go (draw.Rank under seed), as RankDraw does.
func rankedLobby(t *testing.T, st *store.Store, n, through int, seed []byte) (*seckill.Sale, []draw.Ranked) {
	t.Helper()
	ctx := t.Context()
	sale := lobbyShoes(t, st)
	require.NoError(t, st.Gorm().Exec(`INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
		SELECT ?, 'b-' || g, decode(md5(random()::text || g), 'hex'), 'eu-42', 1 FROM generate_series(1, ?) g`, sale.ID, n).Error)
	require.NoError(t, st.CloseLobby(ctx, sale.ID))
	lobby, err := st.ClosedLobby(ctx, sale.ID)
	require.NoError(t, err)
	require.Len(t, lobby, n)
	entries := make([][]byte, n)
	for i, e := range lobby {
		entries[i] = e.Entry
	}
	ranked := draw.Rank(seed, entries)
	require.NoError(t, st.SetRanks(ctx, sale.ID, ranked[:through]))
	require.NoError(t, st.MarkRanked(ctx, sale.ID, n, through))
	return sale, ranked
}

// rankOf reads every entry's rank and outcome by entry.
func rankOf(t *testing.T, st *store.Store, saleID int64) map[string]struct {
	Rank    *int
	Outcome *string
} {
	t.Helper()
	var rows []struct {
		Entry   []byte
		Rank    *int
		Outcome *string
	}
	require.NoError(t, st.Gorm().Raw(`SELECT entry, rank, outcome FROM lobby_entries WHERE sale_id = ?`, saleID).Scan(&rows).Error)
	out := make(map[string]struct {
		Rank    *int
		Outcome *string
	}, len(rows))
	for _, r := range rows {
		out[fmt.Sprintf("%x", r.Entry)] = struct {
			Rank    *int
			Outcome *string
		}{r.Rank, r.Outcome}
	}
	return out
}

// The ranks PostgreSQL writes are draw.Rank's, the ones verify computes:
// a window first (no outcome), then the rest LOST, each once.
func TestRankRest_WritesDrawsOwnRanksAWindowThenTheRestLost(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	seed := []byte("a seed of the draw, any bytes at all")
	sale, ranked := rankedLobby(t, st, 3000, 700, seed)

	through, err := st.RankRest(ctx, sale.ID, seed, 1800, false)
	require.NoError(t, err)
	require.Equal(t, 1800, through)
	d, err := st.DrawOf(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, 1800, d.RankedThrough)
	require.Equal(t, 1, d.NextRank, "a window settles nothing")
	got := rankOf(t, st, sale.ID)
	for _, r := range ranked {
		g := got[fmt.Sprintf("%x", r.Entry)]
		if r.Rank > 1800 {
			require.Nil(t, g.Rank, "rank %d is not written yet", r.Rank)
			continue
		}
		require.NotNil(t, g.Rank)
		require.Equal(t, r.Rank, *g.Rank)
		require.Nil(t, g.Outcome)
	}

	through, err = st.RankRest(ctx, sale.ID, seed, 1<<30, true)
	require.NoError(t, err)
	require.Equal(t, 3000, through)
	d, err = st.DrawOf(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, 3001, d.NextRank, "the rest is settled")
	got = rankOf(t, st, sale.ID)
	for _, r := range ranked {
		g := got[fmt.Sprintf("%x", r.Entry)]
		require.NotNil(t, g.Rank)
		require.Equal(t, r.Rank, *g.Rank)
		if r.Rank > 1800 {
			require.Equal(t, seckill.EntryLost, *g.Outcome)
		} else {
			require.Nil(t, g.Outcome, "a rank of the window keeps its outcome")
		}
	}

	// Again: nothing changes.
	through, err = st.RankRest(ctx, sale.ID, seed, 1<<30, true)
	require.NoError(t, err)
	require.Equal(t, 3000, through)
}

// If PostgreSQL's order ever gave a rank written from Go another rank (a
// seed passed wrongly, an order not draw.Rank's), nothing is written: the
// draw never ranks by two orders.
func TestRankRest_RefusesWhenItsOrderDiffersFromTheRanksWritten(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale, _ := rankedLobby(t, st, 1500, 500, []byte("the seed ranked with"))

	_, err := st.RankRest(ctx, sale.ID, []byte("another seed"), 1<<30, true)

	require.ErrorContains(t, err, "another rank")
	var unranked int64
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM lobby_entries WHERE sale_id = ? AND rank IS NULL AND outcome IS NULL`, sale.ID).Scan(&unranked).Error)
	require.EqualValues(t, 1000, unranked, "nothing written")
	d, err := st.DrawOf(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, 500, d.RankedThrough)
	require.Equal(t, 1, d.NextRank)
}

// ClosedLobby reads the lobby in the entries' order, whatever the table's.
func TestClosedLobby_IsAscendingByEntry(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale, _ := rankedLobby(t, st, 2000, 0, []byte("s"))
	lobby, err := st.ClosedLobby(t.Context(), sale.ID)
	require.NoError(t, err)
	require.Len(t, lobby, 2000)
	listed, err := st.LobbyEntries(t.Context(), sale.ID, nil, 5000)
	require.NoError(t, err)
	require.Equal(t, listed, lobby, "the same lines as the index's order")
}

// Ranks already written past the recorded point (an earlier release's
// RankDraw wrote them all, then died before recording it) are kept, and
// given their LOST: the draw goes on instead of failing for ever
// (hostile review).
func TestRankRest_KeepsRanksWrittenPastTheRecordedPoint(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	seed := []byte("seed")
	sale, ranked := rankedLobby(t, st, 3000, 700, seed)
	require.NoError(t, st.SetRanks(ctx, sale.ID, ranked[700:2000]))

	through, err := st.RankRest(ctx, sale.ID, seed, 1<<30, true)

	require.NoError(t, err)
	require.Equal(t, 3000, through)
	d, err := st.DrawOf(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, 3001, d.NextRank)
	got := rankOf(t, st, sale.ID)
	for _, r := range ranked[700:] {
		g := got[fmt.Sprintf("%x", r.Entry)]
		require.Equal(t, r.Rank, *g.Rank)
		require.Equal(t, seckill.EntryLost, *g.Outcome, "rank %d", r.Rank)
	}
}
