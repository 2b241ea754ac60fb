package store_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// lobbyShoes is the sale of shoes with a lobby open since a minute, that
// starts in an hour.
func lobbyShoes(t testing.TB, st *store.Store) *seckill.Sale {
	t.Helper()
	n := shoes()
	now := time.Now().UTC()
	lobby := now.Add(-time.Minute)
	n.LobbyOpensAt, n.StartsAt, n.EndsAt = &lobby, now.Add(time.Hour), now.Add(2*time.Hour)
	sale, err := st.CreateSale(t.Context(), n, nil)
	require.NoError(t, err)
	return sale
}

func TestEnter_AnEntryKeepsTheItemItAsksFor(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 2}

	entry, created, err := st.Enter(ctx, sale.ID, "ann", item)

	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, item, entry.Item)
	mine, err := st.LobbyEntryOf(ctx, sale.ID, "ann")
	require.NoError(t, err)
	require.Equal(t, entry, mine)
	listed, err := st.LobbyEntries(ctx, sale.ID, nil, 10)
	require.NoError(t, err)
	require.Equal(t, []store.ListedEntry{{Entry: entry.Entry, Item: item}}, listed)
	require.NoError(t, st.SetRanks(ctx, sale.ID, []draw.Ranked{{Entry: entry.Entry, Rank: 1}}))
	ranked, err := st.EntriesFrom(ctx, sale.ID, 1, 10)
	require.NoError(t, err)
	require.Len(t, ranked, 1)
	require.Equal(t, item, ranked[0].Item, "the draw reads the item with the rank")
}

func TestEnter_AnEntryWithoutItemAsksForOneDefaultUnit(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := testenv.LobbySale(t, st, 3)

	entry, _, err := st.Enter(t.Context(), sale.ID, "ann", seckill.Item{})

	require.NoError(t, err)
	require.Equal(t, seckill.DefaultItem, entry.Item)
}

// One entry per buyer: entering again answers the first entry with its
// own item, whatever is asked the second time, so the API can tell a
// repeat (200) from another request (409 ALREADY_ENTERED).
func TestEnter_EnteringAgainAnswersTheFirstEntryWithItsItem(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := lobbyShoes(t, st)
	first, _, err := st.Enter(ctx, sale.ID, "ann", seckill.Item{SKU: "eu-42", Quantity: 2})
	require.NoError(t, err)

	again, created, err := st.Enter(ctx, sale.ID, "ann", seckill.Item{SKU: "eu-43", Quantity: 1})

	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first, again)
	n, err := st.LobbyCount(ctx, sale.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func TestEnter_AnUnknownSKUIsRefusedAndNotEntered(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := lobbyShoes(t, st)

	_, _, err := st.Enter(ctx, sale.ID, "ann", seckill.Item{SKU: "eu-45", Quantity: 1})

	require.ErrorIs(t, err, store.ErrVariantNotFound)
	require.ErrorContains(t, err, `"eu-45"`)
	_, err = st.LobbyEntryOf(ctx, sale.ID, "ann")
	require.ErrorIs(t, err, seckill.ErrNotFound)
}

// An admission the draw recorded but Redis lost is written again with the
// item its entry asked for.
func TestUnwrittenDrawOrders_CarryTheirEntriesItems(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-44.wide", Quantity: 3}
	entry, _, err := st.Enter(ctx, sale.ID, "ann", item)
	require.NoError(t, err)
	require.NoError(t, st.SetRanks(ctx, sale.ID, []draw.Ranked{{Entry: entry.Entry, Rank: 1}}))
	require.NoError(t, st.SettleEntries(ctx, sale.ID, []*seckill.LobbyEntry{
		{UserID: "ann", Rank: 1, Outcome: seckill.EntryWon, OrderID: 101},
	}, 2))

	unwritten, err := st.UnwrittenDrawOrders(ctx, sale.ID)

	require.NoError(t, err)
	require.Len(t, unwritten, 1)
	require.Equal(t, int64(101), unwritten[0].OrderID)
	require.Equal(t, item, unwritten[0].Item)
}

// One user entering many times at once gets one entry: exactly one
// answer creates it, every other answers it.
func TestEnter_ManyFirstEntriesOfOneUserAtOnceMakeOne(t *testing.T) {
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	const n = 16
	var (
		wg      sync.WaitGroup
		created atomic.Int64
		entries sync.Map
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, c, err := st.Enter(t.Context(), sale.ID, "eager", seckill.Item{SKU: "eu-42", Quantity: 1})
			if !assert.NoError(t, err) {
				return
			}
			if c {
				created.Add(1)
			}
			entries.Store(string(e.Entry), true)
		}()
	}
	wg.Wait()
	require.Equal(t, int64(1), created.Load())
	count := 0
	entries.Range(func(any, any) bool { count++; return true })
	require.Equal(t, 1, count, "every answer names the one entry")
}

// Once the lobby is closed a new entry is refused, and one made before is
// still answered.
func TestEnter_AClosedLobbyTakesNoEntryAndAnswersTheOnesItHas(t *testing.T) {
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	before, created, err := st.Enter(t.Context(), sale.ID, "early", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, st.CloseLobby(t.Context(), sale.ID))
	_, _, err = st.Enter(t.Context(), sale.ID, "late", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.ErrorIs(t, err, seckill.ErrLobbyClosed)
	again, created, err := st.Enter(t.Context(), sale.ID, "early", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, before.Entry, again.Entry)
	_, _, err = st.Enter(t.Context(), 987654321, "nobody", seckill.DefaultItem)
	require.ErrorIs(t, err, seckill.ErrLobbyClosed, "a sale that does not exist has no open lobby")
}
