// Package store is seckill's Postgres access: sales and their variants,
// each variant with its authoritative stock split in units, orders and
// payment events. Every stock change is a conditional UPDATE of one
// variant inside one transaction with the order change it belongs to, so
// the database alone can never oversell (docs/DESIGN.md invariant 1).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/migrations"
)

// Store wraps the gorm handle.
type Store struct {
	db      *gorm.DB
	entries *entryCommitter
}

// Options size the connection pool.
type Options struct {
	MaxOpenConns int
	MaxIdleConns int
	// Tracing makes a span of every statement (pgx's tracer, otelpgx, on
	// the global tracer provider), inside the caller's span.
	Tracing bool
}

// Open connects to dsn. It does not create or migrate the database; see
// EnsureDatabase and Migrate.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	var tracer pgx.QueryTracer
	if opts.Tracing {
		tracer = otelpgx.NewTracer()
	}
	return open(ctx, dsn, opts, tracer)
}

// open is Open with tracer (nil: none) on every connection's statements.
func open(ctx context.Context, dsn string, opts Options, tracer pgx.QueryTracer) (*Store, error) {
	dialector := postgres.Open(dsn)
	if tracer != nil {
		pc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		pc.Tracer = tracer
		dialector = postgres.New(postgres.Config{Conn: stdlib.OpenDB(*pc)})
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		// Every write here is either one statement or an explicit
		// transaction; gorm's implicit one per Create only adds round trips.
		SkipDefaultTransaction: true,
		// pgx prepares each statement once per connection and keeps it
		// (its statement cache), inside a transaction or not. gorm's own
		// prepared statements would not do: one first prepared inside a
		// transaction belongs to it and is closed with it, so every later
		// transaction prepared it again, a round trip more inside each
		// saga's transaction for each of its statements (docs/DESIGN.md,
		// the trap of one hot row).
		PrepareStmt: false,
		Logger:      logger.Discard,
		NowFunc:     func() time.Time { return time.Now().UTC() },
	})
	if err != nil { // gorm.Open pings the server
		return nil, fmt.Errorf("open database: %w", unavailable(err))
	}
	if err := registerUnavailable(db); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if opts.MaxOpenConns > 0 {
		sqlDB.SetMaxOpenConns(opts.MaxOpenConns)
	}
	if opts.MaxIdleConns > 0 {
		sqlDB.SetMaxIdleConns(opts.MaxIdleConns)
	}
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connect to database: %w", unavailable(err))
	}
	st := &Store{db: db}
	st.entries = &entryCommitter{st: st}
	return st, nil
}

// Close closes the pool.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks the database answers: seckill.ErrUnavailable when it
// cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return unavailable(sqlDB.PingContext(ctx))
}

// Migrate applies the pending migrations.
func (s *Store) Migrate(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return migrations.Up(ctx, sqlDB)
}

// Gorm exposes the gorm handle, for read-only tools such as the audit.
func (s *Store) Gorm() *gorm.DB { return s.db }

// SQLDB exposes the database/sql handle (for tools and tests).
func (s *Store) SQLDB() (*sql.DB, error) { return s.db.DB() }

// EnsureDatabase creates the database named in dsn if it does not exist,
// connecting to the server's "postgres" database to do so.
func EnsureDatabase(ctx context.Context, dsn string) error {
	conn, name, err := adminConn(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created meanwhile by another process
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	return nil
}

// TemporalDatabaseURLs are the databases beside dsn's where the embedded
// Temporal server of `seckill dev` keeps its state (package devserver):
// the same server, named <name>_temporal and <name>_temporal_visibility,
// so two installations on one PostgreSQL never share Temporal's state.
func TemporalDatabaseURLs(dsn string) (history, visibility string, err error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" || strings.Trim(u.Path, "/") == "" {
		return "", "", fmt.Errorf("DATABASE_URL must be a postgres:// URL naming a database: %q", dsn)
	}
	name := strings.Trim(u.Path, "/")
	h, v := *u, *u
	h.Path, v.Path = "/"+name+"_temporal", "/"+name+"_temporal_visibility"
	return h.String(), v.String(), nil
}

// DropDatabase drops the database named in dsn, if it exists, closing any
// connections to it (benchmark and chaos runs clean up with it).
func DropDatabase(ctx context.Context, dsn string) error {
	conn, name, err := adminConn(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %q: %w", name, err)
	}
	return nil
}

// adminConn connects to the "postgres" database of dsn's server and
// returns the name of dsn's database.
func adminConn(ctx context.Context, dsn string) (*pgx.Conn, string, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return nil, "", fmt.Errorf("DATABASE_URL must be a postgres:// URL: %q", dsn)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil, "", errors.New("DATABASE_URL names no database")
	}
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return nil, "", fmt.Errorf("connect to postgres for database %q: %w", name, err)
	}
	return conn, name, nil
}

func isUniqueViolation(err error, constraint string) bool {
	return isViolation(err, "23505", constraint)
}

func isForeignKeyViolation(err error, constraint string) bool {
	return isViolation(err, "23503", constraint)
}

// isViolation reports whether err is PostgreSQL's SQLSTATE code on
// constraint ("" any).
func isViolation(err error, code, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code && (constraint == "" || pgErr.ConstraintName == constraint)
}

var sqlTxOptionsRepeatableRead = sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}

// InstallationID is the id this database gave its installation when it
// was first migrated.
func (s *Store) InstallationID(ctx context.Context) (string, error) {
	var id string
	if err := s.db.WithContext(ctx).Raw(`SELECT id::text FROM installation`).Scan(&id).Error; err != nil {
		return "", fmt.Errorf("read the installation id: %w", err)
	}
	if id == "" {
		return "", errors.New("read the installation id: the database is not migrated (run seckill migrate)")
	}
	return id, nil
}

// isDataException reports whether err is PostgreSQL refusing a value: a
// data exception (class 22) or a CHECK constraint (23514).
func isDataException(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || pgErr.Code == "23514")
}

// freshPlan runs fn on one of the pool's connections, as pgx's own
// connection, for statements run with pgx.QueryExecModeExec: planned at
// each execution with its arguments, never from a plan cached on the
// connection. A plan cached while a table was small (a new shop's first
// lobby) reads the whole table at each execution once it has grown, until
// autovacuum analyzes it (docs/DESIGN.md, traps).
func (s *Store) freshPlan(ctx context.Context, fn func(conn *pgx.Conn) error) error {
	db, err := s.db.DB()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	return conn.Raw(func(driverConn any) error { return fn(driverConn.(*stdlib.Conn).Conn()) })
}
