package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Unavailable lets this package's tests check how an error is classified,
// for the SQLSTATEs a shared test server cannot be made to send.
func Unavailable(err error) error { return unavailable(err) }

// OpenTraced is Open with tracer on every connection's statements, for
// tests that count what the store sends.
func OpenTraced(ctx context.Context, dsn string, opts Options, tracer pgx.QueryTracer) (*Store, error) {
	return open(ctx, dsn, opts, tracer)
}
