package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// prepares counts the statements a connection really prepared (a round
// trip to PostgreSQL), not those it had prepared already.
type prepares struct {
	mu  sync.Mutex
	sql []string
	cur string
}

func (p *prepares) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (p *prepares) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (p *prepares) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur = d.SQL
	return ctx
}

func (p *prepares) TracePrepareEnd(_ context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !d.AlreadyPrepared {
		p.sql = append(p.sql, p.cur)
	}
}

func (p *prepares) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.sql[n:]...)
}

func (p *prepares) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sql)
}

// A saga's transactions hold the variant's hot row: once their connection
// has run each of their statements, they prepare none again (a prepare is
// a round trip more inside the transaction). gorm's own prepared
// statements, first prepared inside a transaction, were prepared again by
// every later one.
func TestSagaTransactions_PrepareNothingOnceTheirConnectionRanThem(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	traced := &prepares{}
	st, err := store.OpenTraced(ctx, testenv.DatabaseURL(t), store.Options{MaxOpenConns: 1}, traced)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	sale := createSale(t, st, 5)
	one := func(id int64, q int) error {
		_, err := startItem(t, st, sale.ID, id, "buyer-"+string(rune('a'+id)), seckill.Item{SKU: seckill.DefaultSKU, Quantity: q})
		return err
	}
	// Every kind of step: a start that locks, a confirm, a start that
	// finds too few units, a close that gives units back.
	sagas := func(first int64) {
		require.NoError(t, one(first, 1))
		_, err := st.ConfirmPayment(ctx, first, "", "", time.Now())
		require.NoError(t, err)
		require.NoError(t, one(first+1, 2))
		require.ErrorIs(t, one(first+2, 3), store.ErrSoldOut)
		_, err = st.CloseUnpaid(ctx, first+1, seckill.CloseCancelled, "", "", time.Now())
		require.NoError(t, err)
	}
	sagas(1)
	warm := traced.count()
	require.NotZero(t, warm, "the tracer sees the first prepares")

	sagas(11)

	require.Empty(t, traced.since(warm))
	require.Equal(t, split(5, 3, 0, 2), stock(t, st, sale.ID))
}
