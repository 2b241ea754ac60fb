package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// joinItem joins user to the line of it and returns the row the database
// would keep of the place (redisstore.PlaceOf), carrying order id carried.
func joinItem(t *testing.T, sc *redisstore.Store, user string, it seckill.Item, carried int64) seckill.WaitlistEntry {
	t.Helper()
	res, err := sc.Join(t.Context(), saleID, user, it, 100, carried, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, res.Outcome, "%s", user)
	e, ok, err := sc.PlaceOf(t.Context(), saleID, user)
	require.NoError(t, err)
	require.True(t, ok, "%s waits", user)
	require.Equal(t, it, e.Item)
	e.OrderID, e.JoinedAt = carried, time.Now()
	return e
}

// wipe is a Redis that lost every key of the test's sale (restarted
// empty, or a primary lost with its replica).
func wipe(t *testing.T, sc *redisstore.Store) {
	t.Helper()
	require.NoError(t, sc.DropAll(t.Context()))
	_, ok, err := sc.Remaining(t.Context(), saleID)
	require.NoError(t, err)
	require.False(t, ok, "the sale's keys are gone")
}

func rebuild(t *testing.T, sc *redisstore.Store, spec seckill.WarmSpec, claims []seckill.ActiveClaim, rows []seckill.WaitlistEntry) redisstore.Rewarmed {
	t.Helper()
	r, err := sc.RewarmRebuilding(t.Context(), spec, claims, nil, rows, func(string) seckill.Terms { return terms })
	require.NoError(t, err)
	require.True(t, r.Loaded)
	return r
}

// A sale's line lost with Redis is rebuilt from the database's rows: each
// buyer at the same place, a buyer who holds an order (restored as a
// claim) not queued again, later joins behind them, and the next unit
// that comes back goes to the first.
func TestRewarmRebuilding_PutsTheLineBackInItsOrder(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSale(1)
	warm(t, sc, spec)
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	var rows []seckill.WaitlistEntry
	for i, u := range []string{"bob", "cat", "dan"} {
		rows = append(rows, joinItem(t, sc, u, seckill.DefaultItem, int64(3001+i)))
	}
	left, err := sc.Leave(ctx, saleID, "cat")
	require.NoError(t, err)
	require.True(t, left)
	rows = append(rows[:1], rows[2]) // cat's row is deleted as she leaves
	// A stale row of ann's (the store leaves out a buyer served since, but
	// one holding an active order is known to Redis too): not queued again.
	rows = append(rows, seckill.WaitlistEntry{SaleID: saleID, UserID: "ann", Item: seckill.DefaultItem, OrderID: 3009, Place: 0})
	wipe(t, sc)

	spec.Variants[0].Units = 0 // ann's order holds the one unit
	r := rebuild(t, sc, spec, []seckill.ActiveClaim{{UserID: "ann", OrderID: 1001, Item: seckill.DefaultItem}}, rows)
	require.Equal(t, redisstore.Rewarmed{Loaded: true, Waiting: 2}, r)

	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "bob"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 2}, waitState(t, sc, "dan"))
	require.Equal(t, seckill.WaitState{}, waitState(t, sc, "cat"), "who left is not brought back")
	require.Equal(t, seckill.WaitState{}, waitState(t, sc, "ann"), "ann holds her order, she does not wait")
	require.Equal(t, int64(1001), claimOf(t, sc, "ann"))
	res, err := sc.Join(ctx, saleID, "eve", seckill.DefaultItem, 100, 3005, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: 3}, res, "a later join is behind the line put back")

	rel, err := sc.Release(ctx, saleID, "ann", 1001, seckill.DefaultItem, next(5001))
	require.NoError(t, err)
	require.Len(t, rel.HandedTo, 1)
	require.Equal(t, "bob", rel.HandedTo[0].UserID, "the unit that comes back is the first's")
	require.Equal(t, seckill.WaitState{OrderID: 5001}, waitState(t, sc, "bob"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "dan"))
}

// A sale of two variants with quantities: each line is rebuilt in its
// order, and the variant's reloaded units go to its line first, as units
// that came back do: held for a head who waits for more than there are,
// a head they cover admitted with the order id their join carried.
func TestRewarmRebuilding_GivesTheReloadedUnitsToEachLinesHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sUnits int64 // the database's units of s at the re-warm
	}{{"too few for the head: held for them", 1}, {"enough for the head: served", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := testenv.RedisStore(t)
			ctx := t.Context()
			spec := sizes(1, 0)
			warm(t, sc, spec)
			require.Equal(t, seckill.Admitted, claimItem(t, sc, "ann", 1001, seckill.Item{SKU: "s", Quantity: 1}).Outcome)
			rows := []seckill.WaitlistEntry{
				joinItem(t, sc, "bob", seckill.Item{SKU: "s", Quantity: 2}, 3001),
				joinItem(t, sc, "cat", seckill.Item{SKU: "l", Quantity: 2}, 3002),
				joinItem(t, sc, "dan", seckill.Item{SKU: "s", Quantity: 1}, 3003),
			}
			wipe(t, sc)

			spec.Variants[0].Units = tc.sUnits
			annHolds := []seckill.ActiveClaim{{UserID: "ann", OrderID: 1001, Item: seckill.Item{SKU: "s", Quantity: 1}}}
			r := rebuild(t, sc, spec, annHolds, rows)

			require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "cat"), "l's line")
			if tc.sUnits == 1 {
				require.Equal(t, redisstore.Rewarmed{Loaded: true, Waiting: 3}, r)
				require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "bob"))
				require.Equal(t, seckill.WaitState{Waiting: true, Position: 2}, waitState(t, sc, "dan"))
				require.Equal(t, seckill.Held{ForWaiting: 1, Claimed: 1}, heldOf(t, sc, "s"), "the unit is held for bob, not left to claims")
				// ann's unit comes back: with the one held, bob's two.
				rel, err := sc.Release(ctx, saleID, "ann", 1001, seckill.Item{SKU: "s", Quantity: 1}, next(5001))
				require.NoError(t, err)
				require.Len(t, rel.HandedTo, 1)
				require.Equal(t, "bob", rel.HandedTo[0].UserID)
				require.Equal(t, seckill.WaitState{OrderID: 5001}, waitState(t, sc, "bob"))
				require.Equal(t, seckill.Held{Claimed: 2}, heldOf(t, sc, "s"))
			} else {
				require.Equal(t, redisstore.Rewarmed{Loaded: true, Waiting: 3, Served: 1}, r)
				require.Equal(t, seckill.WaitState{OrderID: 3001}, waitState(t, sc, "bob"), "served with the order id his join carried")
				require.Equal(t, int64(3001), claimOf(t, sc, "bob"))
				a, ok, err := sc.Admission(ctx, 3001, []int64{saleID})
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, seckill.Item{SKU: "s", Quantity: 2}, a.Item)
				var toSaga []string
				for _, m := range outbox(t, sc) {
					toSaga = append(toSaga, fmt.Sprint(m.Values["o"]))
				}
				require.Equal(t, []string{"3001"}, toSaga, "bob's order is on its way to its saga")
				require.Equal(t, seckill.Held{Claimed: 3}, heldOf(t, sc, "s"), "every unit counted once: ann's and bob's")
			}
			require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "dan"), "behind bob, now served")
		})
	}
}

// On a sale of several segments each lost segment puts its own buyers
// back at their places: the one line over every segment keeps its order.
func TestRewarmRebuilding_OneLineOverSeveralSegments(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(0, 2)
	warm(t, sc, spec)
	users := []string{userOfSegment(t, 1, 2), userOfSegment(t, 0, 2)}
	for i := 0; len(users) < 4; i++ {
		if u := fmt.Sprint("more-", i); redisstore.SegmentOf(u, 2) == len(users)%2 {
			users = append(users, u)
		}
	}
	var rows []seckill.WaitlistEntry
	for i, u := range users {
		rows = append(rows, joinItem(t, sc, u, seckill.DefaultItem, int64(3001+i)))
	}
	wipe(t, sc)

	r := rebuild(t, sc, spec, nil, rows)
	require.Equal(t, redisstore.Rewarmed{Loaded: true, Waiting: 4}, r)
	for i, u := range users {
		require.Equal(t, seckill.WaitState{Waiting: true, Position: int64(i + 1)}, waitState(t, sc, u), "%s", u)
	}
	late := userOfSegment(t, 0, 2)
	for i := 0; late == users[1] || late == users[3]; i++ {
		if u := fmt.Sprint("late-", i); redisstore.SegmentOf(u, 2) == 0 {
			late = u
		}
	}
	res, err := sc.Join(ctx, saleID, late, seckill.DefaultItem, 100, 3009, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, res.Outcome)
	require.Equal(t, int64(5), res.Position, "numbered after every place put back")
}

// PlaceOf tells "waits in no line" (served, or left) from "the segment is
// not loaded": a buyer Redis lost since their join may be put back from the
// database's rows, or not, so nobody may be told 201 on it (hostile
// review: a 201 with no row, its line rebuilt without them).
func TestPlaceOf_ABuyerOfALostSegmentIsNotWarmedNotGone(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSale(1)
	warm(t, sc, spec)
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	joinItem(t, sc, "bob", seckill.DefaultItem, 3001)
	_, ok, err := sc.PlaceOf(ctx, saleID, "cat")
	require.NoError(t, err)
	require.False(t, ok, "cat never joined")

	wipe(t, sc)
	_, ok, err = sc.PlaceOf(ctx, saleID, "bob")
	require.ErrorIs(t, err, redisstore.ErrNotWarmed)
	require.False(t, ok)
}
