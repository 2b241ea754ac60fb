// Package testenv gives each test its own Postgres database and Redis key
// prefix on the machine's real servers, and removes both when the test
// ends. Tests skip nothing: when a server is missing they fail, because
// `make test` starts both.
//
// TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
// names the server to create databases on; TEST_REDIS_URL (default
// redis://127.0.0.1:6379/0) the Redis.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Suffix returns a short random name segment.
func Suffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// DatabaseURL creates a fresh, migrated database and returns its URL. The
// database is dropped when t ends.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := env("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	name := "seckill_test_" + Suffix()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to postgres (%s): %v", admin, err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer func() { _ = c.Close(ctx) }()
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dsn := u.String()
	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// RefuseConnections makes the database of dsn (one DatabaseURL made)
// refuse every new connection and ends the ones it has, as a PostgreSQL
// that is restarting or out of connections does, until allow is called
// or t ends. (CONNECTION LIMIT 0 would not do: the tests connect as a
// superuser, whom it does not bind.)
func RefuseConnections(t testing.TB, dsn string) (allow func()) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Trim(u.Path, "/")
	alter := func(allowed bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin := *u
		admin.Path = "/postgres"
		conn, err := pgx.Connect(ctx, admin.String())
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close(ctx) }()
		_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" ALLOW_CONNECTIONS "+strconv.FormatBool(allowed))
		if err != nil || allowed {
			return err
		}
		_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
		return err
	}
	if err := alter(false); err != nil {
		t.Fatalf("refuse connections to %s: %v", name, err)
	}
	var once sync.Once
	allow = func() {
		once.Do(func() {
			if err := alter(true); err != nil {
				t.Errorf("allow connections to %s: %v", name, err)
			}
		})
	}
	t.Cleanup(allow) // before DatabaseURL's cleanup drops it
	return allow
}

// Store opens a store on a fresh database, closed when t ends.
func Store(t testing.TB) (*store.Store, string) {
	t.Helper()
	dsn := DatabaseURL(t)
	st, err := store.Open(context.Background(), dsn, store.Options{MaxOpenConns: 32, MaxIdleConns: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, dsn
}

// RedisURL is the Redis tests use.
func RedisURL() string { return env("TEST_REDIS_URL", "redis://127.0.0.1:6379/0") }

// Redis returns a client and a key prefix of the test's own; every key
// under the prefix is deleted when t ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.PoolSize = 256
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("connect to redis: %v", err)
	}
	prefix := "seckilltest-" + Suffix()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = redisstore.New(rdb, prefix).DropAll(ctx)
		_ = rdb.Close()
	})
	return rdb, prefix
}

// RedisStore returns a Store on the test's own prefix.
func RedisStore(t testing.TB) *redisstore.Store {
	rdb, prefix := Redis(t)
	return redisstore.New(rdb, prefix)
}

// Name returns a name for t usable in ids (lower case, no spaces).
func Name(t testing.TB) string {
	return strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
}

// TemporalDatabaseURL names a seckill database for a test process's
// embedded Temporal server, so the server keeps its state in PostgreSQL
// databases of its own (<name>_temporal, <name>_temporal_visibility). The
// databases of earlier test processes that are gone are dropped first: a
// test binary exits without stopping its server, so it cannot drop its
// own.
func TemporalDatabaseURL() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := env("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close(ctx) }()
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'seckill_e2e_%'`)
	if err != nil {
		return "", err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, name := range names {
		var pid int
		if _, err := fmt.Sscanf(name, "seckill_e2e_%d_", &pid); err != nil || processAlive(pid) {
			continue
		}
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			return "", fmt.Errorf("drop %s: %w", name, err)
		}
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/seckill_e2e_" + strconv.Itoa(os.Getpid())
	return u.String(), nil
}

func processAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// ForEachBuyer calls buy(i) for buyers 1..n, workers at a time, and
// returns when every call has.
func ForEachBuyer(n, workers int, buy func(i int64)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				buy(i)
			}
		}()
	}
	wg.Wait()
}

// DefaultVariant is the one variant of a sale as a v3 body makes it: sku
// seckill.DefaultSKU, stock units at priceCents.
func DefaultVariant(name string, priceCents, stock int64) []seckill.NewVariant {
	return []seckill.NewVariant{{SKU: seckill.DefaultSKU, Name: name, PriceCents: priceCents, Stock: stock}}
}

// OpenSale creates a sale of stock units in st, open from an hour ago for
// the next hour, at 9.90 USD with an hour to pay.
func OpenSale(t testing.TB, st *store.Store, stock int64) *seckill.Sale {
	t.Helper()
	now := time.Now().UTC()
	sale, err := st.CreateSale(context.Background(), seckill.NewSale{Name: "test sale", Currency: "usd", Variants: DefaultVariant("test sale", 990, stock),
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sale
}

// LobbySale creates a sale of stock units whose lobby opened an hour ago,
// with users entered in it; it starts in a minute and ends in an hour.
func LobbySale(t testing.TB, st *store.Store, stock int64, users ...string) *seckill.Sale {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	lobby := now.Add(-time.Hour)
	sale, err := st.CreateSale(ctx, seckill.NewSale{Name: "lobby test sale", Currency: "usd", Variants: DefaultVariant("lobby test sale", 990, stock),
		StartsAt: now.Add(time.Minute), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Minute, LobbyOpensAt: &lobby}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if _, _, err := st.Enter(ctx, sale.ID, u, seckill.DefaultItem); err != nil {
			t.Fatal(err)
		}
	}
	return sale
}

// StartedNow moves sale's start to a minute ago (its lobby closed since)
// and returns it as it is now.
func StartedNow(t testing.TB, st *store.Store, sale *seckill.Sale) *seckill.Sale {
	t.Helper()
	ctx := context.Background()
	if err := st.Gorm().Exec(`UPDATE sales SET starts_at = ? WHERE id = ?`, time.Now().UTC().Add(-time.Minute), sale.ID).Error; err != nil {
		t.Fatal(err)
	}
	started, err := st.Sale(ctx, sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	return started
}

// Warm loads units of sale into rs for its window (units may differ from
// the database's stock: a test's drift).
func Warm(t testing.TB, rs *redisstore.Store, sale *seckill.Sale, units int64) {
	t.Helper()
	if _, err := rs.Warm(context.Background(), seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}}, StartsAt: sale.StartsAt, EndsAt: sale.EndsAt}); err != nil {
		t.Fatal(err)
	}
}

// NoLeaks checks, once t and all its cleanups are done, that no goroutine
// started during t is left. Call it first in the test, so its check runs
// after the cleanups that close the test's stores. Ignored, not ours:
// gorm's statement-cache janitor and fasthttp's clock, which live as long
// as the process, and fasthttp's worker-pool cleaner, which ends at its
// next tick after its server stops.
func NoLeaks(t testing.TB) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := leftGoroutines(append(lifelong, before)...); err != nil {
			t.Error(err)
		}
	})
}

// lifelong are the goroutines that live as long as the process: gorm's
// statement-cache janitor and fasthttp's clock, and fasthttp's
// worker-pool cleaner, which ends at its next tick after its server
// stops.
var lifelong = []goleak.Option{
	goleak.IgnoreAnyFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
}

// LeakCheckMain is a package's TestMain: it runs the tests, then fails
// the package if a goroutine one of them started is still running
// (go.uber.org/goleak), but for the lifelong ones.
// ignore adds goroutines the package knows to outlive its tests.
func LeakCheckMain(m *testing.M, ignore ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		if err := leftGoroutines(append(slices.Clone(lifelong), ignore...)...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on a successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakSettle is how long leftGoroutines waits for goroutines to end. A
// closed go-redis pool's dial prober (started after a failed dial, as
// tests that stop a Redis provoke) sees the close only when its one-second
// sleep ends, and goleak's own retries give up after about half a second.
const leakSettle = 5 * time.Second

// leftGoroutines is goleak.Find retried until leakSettle has passed: nil
// once no goroutine but those opts ignore is left.
func leftGoroutines(opts ...goleak.Option) error {
	deadline := time.Now().Add(leakSettle)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SegmentedSale is OpenSale with its Redis stock split into segments, warmed
// in rs with all its units.
func SegmentedSale(t testing.TB, st *store.Store, rs *redisstore.Store, stock int64, segments int) *seckill.Sale {
	t.Helper()
	now := time.Now().UTC()
	sale, err := st.CreateSale(context.Background(), seckill.NewSale{Name: "segmented test sale", Currency: "usd",
		Variants: DefaultVariant("segmented test sale", 990, stock),
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Hour, StockSegments: segments}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Warm(context.Background(), seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: stock}}, StartsAt: sale.StartsAt,
		EndsAt: sale.EndsAt, Segments: segments}); err != nil {
		t.Fatal(err)
	}
	return sale
}

// GivenNotForgotten leaves move id of units from segment from to segment dest of
// saleID as a mover stopped between give.lua and forget.lua leaves it: the
// units in dest's stock, the id in dest's moved set, the record (taken at
// at) still in from's moves. rdb is rs's client.
func GivenNotForgotten(t testing.TB, rdb *redis.Client, rs *redisstore.Store, saleID int64, from, dest int, id string, units int64, at time.Time) {
	t.Helper()
	ctx := context.Background()
	src, dst := rs.SegmentKeys(saleID, from), rs.SegmentKeys(saleID, dest)
	for _, err := range []error{
		rdb.DecrBy(ctx, src.Stock, units).Err(),
		rdb.HSet(ctx, src.Moves, id, fmt.Sprintf(`{"units":%d,"dest":%d,"at":%d}`, units, dest, at.UnixMilli())).Err(),
		rdb.IncrBy(ctx, dst.Stock, units).Err(),
		rdb.SAdd(ctx, dst.Moved, id).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TakenNotGiven leaves move id of units from segment from to segment dest
// of saleID as a mover stopped between take.lua and give.lua leaves it:
// the units gone from from's stock, the record (taken at at) in from's
// moves, nothing in dest. rdb is rs's client.
func TakenNotGiven(t testing.TB, rdb redis.Cmdable, rs *redisstore.Store, saleID int64, from, dest int, id string, units int64, at time.Time) {
	t.Helper()
	ctx := context.Background()
	src := rs.SegmentKeys(saleID, from)
	for _, err := range []error{
		rdb.DecrBy(ctx, src.Stock, units).Err(),
		rdb.HSet(ctx, src.Moves, id, fmt.Sprintf(`{"units":%d,"dest":%d,"at":%d}`, units, dest, at.UnixMilli())).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// EndedNow moves sale's start to two minutes ago and its end to a second
// ago, in the database and in every segment Redis holds (rdb, rs): a test
// of what happens after the end decides it, instead of waiting for a
// window to pass (which a slow machine may overshoot or not reach).
func EndedNow(t testing.TB, st *store.Store, rdb redis.Cmdable, rs *redisstore.Store, sale *seckill.Sale) *seckill.Sale {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if err := st.Gorm().Exec(`UPDATE sales SET starts_at = ?, ends_at = ? WHERE id = ?`,
		now.Add(-2*time.Minute), now.Add(-time.Second), sale.ID).Error; err != nil {
		t.Fatal(err)
	}
	n, err := rs.Segments(ctx, sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	for q := range n {
		meta := rs.SegmentKeys(sale.ID, q).Meta
		if rdb.Exists(ctx, meta).Val() == 1 {
			if err := rdb.HSet(ctx, meta, "ends_ms", now.Add(-time.Second).UnixMilli()).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ended, err := st.Sale(ctx, sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	return ended
}

// BeaconLobbySale creates a sale with a lobby, started a minute ago, whose
// draw waits for the development chain's first round at or after roundAt
// and has not ranked: the record of a draw whose beacon is late when
// roundAt is past (no draw is started).
func BeaconLobbySale(t testing.TB, st *store.Store, roundAt time.Time) *seckill.Sale {
	t.Helper()
	now := time.Now().UTC()
	lobby := now.Add(-time.Hour)
	round := beacon.Dev.FirstRoundAt(roundAt)
	sale, err := st.CreateSale(context.Background(), seckill.NewSale{Name: "beacon lobby sale", Currency: "usd",
		Variants: DefaultVariant("beacon lobby sale", 100, 5), StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		PaymentTimeout: time.Minute, LobbyOpensAt: &lobby,
		Beacon: &seckill.DrawBeacon{Chain: beacon.Dev.Hash, Round: round, RoundAt: beacon.Dev.RoundTime(round)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sale
}
