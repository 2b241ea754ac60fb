package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// PostgreSQL that cannot be used right now surfaces in two places, and
// both are covered here once rather than in each method: every statement
// (create, query, update, delete, row, raw; inside a transaction or not)
// runs gorm's callbacks, so one callback registered last on each
// (markUnavailable) sees every statement's error; a transaction's BEGIN
// and COMMIT run no callback, so every transaction goes through
// Store.transaction. Open's and Ping's own errors are marked where they
// are returned.

// unavailableError is an error of PostgreSQL's that means it cannot be
// used right now: it is seckill.ErrUnavailable too, with its own message.
type unavailableError struct{ error }

func (e unavailableError) Unwrap() []error { return []error{e.error, seckill.ErrUnavailable} }

// unavailable returns err marked as seckill.ErrUnavailable when it says
// PostgreSQL cannot be used right now, else err as it is.
func unavailable(err error) error {
	if err == nil || errors.Is(err, seckill.ErrUnavailable) || !pgUnavailable(err) {
		return err
	}
	return unavailableError{err}
}

// pgUnavailable reports whether err means that PostgreSQL, not the
// statement, failed: the server refused the connection, dropped it or is
// shutting down, the connection could not be made or broke, or no
// connection came free (or answered) before the caller's deadline. A
// cancelled context is the caller leaving, not PostgreSQL failing.
func pgUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if strings.HasPrefix(pgErr.Code, "08") { // connection_exception
			return true
		}
		switch pgErr.Code {
		case "53300", // too_many_connections
			"57P01", // admin_shutdown: the server is stopping, or the backend was terminated
			"57P02", // crash_shutdown
			"57P03": // cannot_connect_now: starting up or shutting down
			return true
		}
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	switch {
	case errors.As(err, &connectErr), // no connection could be made
		pgconn.SafeToRetry(err),                  // failed before anything reached the server
		pgconn.Timeout(err),                      // the server did not answer before the deadline
		errors.Is(err, context.DeadlineExceeded), // database/sql's wait for a free connection
		errors.Is(err, driver.ErrBadConn),        // database/sql gave up on a broken connection
		errors.Is(err, io.ErrUnexpectedEOF),      // pgx: the server closed the connection
		errors.As(err, &netErr):                  // a network error between us and the server
		return true
	}
	return false
}

// markUnavailable is the gorm callback run after each statement: it
// marks the statement's error as seckill.ErrUnavailable when it is one.
func markUnavailable(db *gorm.DB) {
	if db.Error == nil {
		return
	}
	db.Error = unavailable(db.Error)
	if db.Statement != nil && db.Statement.Result != nil {
		db.Statement.Result.Error = db.Error
	}
}

// registerUnavailable registers markUnavailable after every other
// callback of every kind of statement.
func registerUnavailable(db *gorm.DB) error {
	cb := db.Callback()
	for _, last := range []interface {
		Register(name string, fn func(*gorm.DB)) error
	}{cb.Create().After("*"), cb.Query().After("*"), cb.Update().After("*"),
		cb.Delete().After("*"), cb.Row().After("*"), cb.Raw().After("*")} {
		if err := last.Register("seckill:unavailable", markUnavailable); err != nil {
			return err
		}
	}
	return nil
}

// transaction runs fc in a transaction of ctx (opts as gorm's
// Transaction). Every transaction of the store begins here: a BEGIN or a
// COMMIT that PostgreSQL cannot take is marked seckill.ErrUnavailable.
// fc's statements are marked by markUnavailable; fc's other errors (such
// as the one CreateSale's caller returns from within) are returned as
// they are.
func (s *Store) transaction(ctx context.Context, fc func(tx *gorm.DB) error, opts ...*sql.TxOptions) error {
	fcFailed := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := fc(tx)
		fcFailed = err != nil
		return err
	}, opts...)
	if err != nil && !fcFailed {
		return unavailable(err) // BEGIN or COMMIT failed
	}
	return err
}
