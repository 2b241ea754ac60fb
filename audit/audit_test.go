package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/audit"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// The audit passes a sale whose stores agree, and names the invariant a
// drift breaks: here a Redis counter above the database's available units
// (invariant 6).
func TestRun_NamesTheInvariantADriftBreaks(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 5)
	a := &audit.Auditor{DB: st.Gorm(), Redis: rs}

	rep, err := a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)

	require.NoError(t, rdb.IncrBy(ctx, rs.SaleKeys(sale.ID).Stock, 2).Err()) // Redis holds 2 units the DB lacks
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.False(t, rep.OK(), "%s", rep)
	failed := map[int]bool{}
	for _, c := range rep.Checks {
		if !c.OK {
			failed[c.Invariant] = true
		}
	}
	require.True(t, failed[6], "Redis above the database breaks invariant 6:\n%s", rep)
	require.Contains(t, rep.String(), "FAIL")
}

// A unit left in stock while buyers wait on the waitlist breaks invariant
// 2: at rest, every unit that came back is with a waiting buyer first.
func TestRun_FailsAUnitLeftInStockWhileBuyersWait(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 0)
	j, err := rs.Join(ctx, sale.ID, "ann", 10, 0, redisstore.TermsOf(*sale))
	require.NoError(t, err)
	require.Equal(t, redisstore.JoinWaiting, j.Outcome)
	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Stock).Err()) // Redis = DB = 1, but ann waits

	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(ctx, sale.ID, audit.Options{})

	require.NoError(t, err)
	require.Equal(t, int64(1), rep.Waiting)
	require.False(t, rep.Checks[1].OK, "%s", rep)
	require.Contains(t, rep.String(), "1 units in stock while 1 buyers wait")
}
