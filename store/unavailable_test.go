package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// The store answers seckill.ErrUnavailable, with the cause kept, for every
// error that means PostgreSQL cannot be used right now, and only for
// those: the API turns it into 503 UNAVAILABLE with Retry-After, anything
// else into a 500.

// everyKindOfCall is a call of the store of each kind gorm runs (query,
// count, create, update, delete, raw statement, raw row, transaction)
// and Ping.
func everyKindOfCall(st *store.Store, saleID int64) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"query": func(ctx context.Context) error { _, err := st.Sale(ctx, saleID); return err },
		"list":  func(ctx context.Context) error { _, err := st.Sales(ctx, 10, 0); return err },
		"count": func(ctx context.Context) error { _, err := st.HoldsShopEvents(ctx, 1); return err },
		"create": func(ctx context.Context) error {
			_, _, err := st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: "evt_u", Type: string(seckill.PaymentSucceeded),
				OrderID: 1, Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived})
			return err
		},
		"update": func(ctx context.Context) error {
			return st.SetPaymentOutcome(ctx, "evt_u", seckill.OutcomeApplied, true)
		},
		"delete": func(ctx context.Context) error { return st.ForgetKeptShopEvents(ctx, []string{"x"}) },
		"exec":   func(ctx context.Context) error { return st.MarkDelivered(ctx, "evt_u") },
		"row":    func(ctx context.Context) error { _, err := st.InstallationID(ctx); return err },
		"transaction": func(ctx context.Context) error {
			_, err := st.CreateSale(ctx, newSale(1), nil)
			return err
		},
		"read-only transaction": func(ctx context.Context) error { _, err := st.WarmSnapshot(ctx, saleID); return err },
		"ping":                  func(ctx context.Context) error { return st.Ping(ctx) },
	}
}

func TestUnavailable_EveryCallWhilePostgresRefusesConnectionsIsUnavailable(t *testing.T) {
	t.Parallel()
	dsn := testenv.DatabaseURL(t)
	st, err := store.Open(t.Context(), dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	sale := createSale(t, st, 1)

	testenv.RefuseConnections(t, dsn)

	for name, call := range everyKindOfCall(st, sale.ID) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := call(ctx)
		cancel()
		require.ErrorIs(t, err, seckill.ErrUnavailable, "%s", name)
		require.Equal(t, seckill.CodeUnavailable, seckill.ErrorCode(err), "%s", name)
	}
}

func TestUnavailable_EveryCallThatFindsNoFreeConnectionInTimeIsUnavailable(t *testing.T) {
	t.Parallel()
	dsn := testenv.DatabaseURL(t)
	st, err := store.Open(t.Context(), dsn, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	sale := createSale(t, st, 1)
	db, err := st.SQLDB()
	require.NoError(t, err)
	held, err := db.Conn(t.Context()) // the pool's only connection
	require.NoError(t, err)

	for name, call := range everyKindOfCall(st, sale.ID) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		err := call(ctx)
		cancel()
		require.ErrorIs(t, err, seckill.ErrUnavailable, "%s", name)
		require.ErrorIs(t, err, context.DeadlineExceeded, "%s: the cause is kept", name)
	}

	require.NoError(t, held.Close())
	_, err = st.Sale(t.Context(), sale.ID)
	require.NoError(t, err, "the store works again once a connection is free")
}

func TestUnavailable_OpeningAPostgresNobodyListensOnIsUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	_, err = store.Open(t.Context(), "postgres://postgres@"+addr+"/seckill?sslmode=disable&connect_timeout=5", store.Options{})

	require.ErrorIs(t, err, seckill.ErrUnavailable)
	var connectErr *pgconn.ConnectError
	require.ErrorAs(t, err, &connectErr, "the cause is kept")
}

func TestUnavailable_AnOrdinaryErrorIsNotUnavailable(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	badCurrency := newSale(1)
	badCurrency.Currency = "US$"
	fromWithin := fmt.Errorf("warm: %w", context.DeadlineExceeded) // not PostgreSQL's

	for name, err := range map[string]error{
		"not found": func() error { _, err := st.Sale(ctx, 12345); return err }(),
		"not found in a transaction": func() error {
			_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 7, SaleID: 999, UserID: "alice", CreatedAt: time.Now()})
			return err
		}(),
		"check violation": func() error { _, err := st.CreateSale(ctx, badCurrency, nil); return err }(),
		"an error of the transaction's caller": func() error {
			_, err := st.CreateSale(ctx, newSale(1), func(*seckill.Sale) error { return fromWithin })
			return err
		}(),
	} {
		require.Error(t, err, "%s", name)
		require.NotErrorIs(t, err, seckill.ErrUnavailable, "%s: %v", name, err)
		require.Equal(t, seckill.CodeInternal, seckill.ErrorCode(err), "%s", name)
	}
}

func TestUnavailable_WhatPostgresSaysIsClassifiedByItsCode(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]bool{
		"53300": true,  // too_many_connections
		"08006": true,  // connection_failure
		"08001": true,  // sqlclient_unable_to_establish_sqlconnection
		"57P01": true,  // admin_shutdown
		"57P02": true,  // crash_shutdown
		"57P03": true,  // cannot_connect_now
		"23505": false, // unique_violation
		"23514": false, // check_violation
		"40001": false, // serialization_failure
		"57014": false, // query_canceled
		"42P01": false, // undefined_table
	} {
		err := store.Unavailable(fmt.Errorf("load sale 1: %w", &pgconn.PgError{Severity: "FATAL", Code: code}))
		require.Equal(t, want, errors.Is(err, seckill.ErrUnavailable), "SQLSTATE %s", code)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, "SQLSTATE %s: the cause is kept", code)
	}
	require.NotErrorIs(t, store.Unavailable(context.Canceled), seckill.ErrUnavailable, "the caller left")
	require.NoError(t, store.Unavailable(nil))
}
