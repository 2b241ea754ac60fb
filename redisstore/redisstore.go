// Package redisstore is seckill's Redis: the only package that talks to it.
// Its methods say what they do (admit a claim, release one, read and
// acknowledge the outbox, lease an id node, ...), so the rules of the three
// topologies live here and nowhere else:
//
//   - every key of one sale shares the hash tag {s<id>}, every script
//     touches one sale's keys only, and nothing runs a multi-key command
//     across slots, so all of it works on a Redis Cluster;
//   - a write a buyer is told about (an admission, a release) waits until
//     MinReplicas replicas hold it (WAIT), so a Sentinel or Cluster
//     failover cannot erase it;
//   - one installation owns a key prefix (see Claim Prefix), so two never
//     share keys by accident.
//
// The scripts themselves are in the lua package, one file per operation.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Topology is the kind of Redis a REDIS_URL names.
type Topology string

// The three topologies.
const (
	Single   Topology = "single"   // redis://host:port/db
	Sentinel Topology = "sentinel" // redis-sentinel://sentinel:port?master_name=NAME
	Cluster  Topology = "cluster"  // redis-cluster://node:port
)

// Options tune a Store opened from a URL. Zero values take the defaults in
// brackets.
type Options struct {
	// PoolSize is the most connections per Redis node [go-redis' default].
	PoolSize int
	// MinReplicas is how many replicas must hold an admission or a release
	// before it counts; -1 takes the topology's default (1 with Sentinel
	// or Cluster, 0 with a single server).
	MinReplicas int
	// ReplicaTimeout bounds the wait for those replicas [500ms].
	ReplicaTimeout time.Duration
	// Tracing makes a span of every command and script (go-redis'
	// OpenTelemetry instrumentation, on the global tracer provider).
	Tracing bool
}

// DefaultReplicaTimeout bounds the wait for replicas unless told otherwise.
const DefaultReplicaTimeout = 500 * time.Millisecond

// Store is seckill's Redis under one key prefix.
type Store struct {
	rdb      redis.UniversalClient
	prefix   string
	topology Topology
	limit    RateLimit
	replicas int           // WAIT for this many replicas after a durable write (0: no wait)
	wait     time.Duration // ... for at most this long
	segments *segments     // the segments of each sale (shared by copies of s)
	byDraw   bool          // the sale's draw admits and queues (ForDraw)
}

// RateLimit is how many claims one user may attempt on one sale in a
// sliding window. Zero Max: no limit.
type RateLimit struct {
	Max    int
	Window time.Duration
}

// WithRateLimit returns s limiting each user's claims per sale to l. The
// limit holds across every API process: its log lives in Redis.
func (s *Store) WithRateLimit(l RateLimit) *Store {
	c := *s
	c.limit = l
	return &c
}

// ForDraw returns s as the draw of a sale with a lobby uses it: its
// claims and joins pass the start check that holds open claims back until
// the draw is done, and nobody's attempts are rate limited.
func (s *Store) ForDraw() *Store {
	c := *s
	c.limit, c.byDraw = RateLimit{}, true
	return &c
}

// New returns a Store using rdb with key prefix (e.g. "seckill"); tests use
// a prefix of their own. It waits for no replicas: see WithReplicas.
func New(rdb redis.UniversalClient, prefix string) *Store {
	t := Single
	if _, ok := rdb.(*redis.ClusterClient); ok {
		t = Cluster
	}
	return &Store{rdb: rdb, prefix: prefix, topology: t, wait: DefaultReplicaTimeout, segments: newSegments()}
}

// WithReplicas returns s waiting, after each admission and release, until
// n replicas hold it, for at most timeout (DefaultReplicaTimeout if 0).
func (s *Store) WithReplicas(n int, timeout time.Duration) *Store {
	c := *s
	c.replicas = max(n, 0)
	if timeout > 0 {
		c.wait = timeout
	}
	return &c
}

// Open connects to the Redis that rawURL names, in one of three forms:
//
//	redis://[user:pass@]host:port/db                                 one server
//	redis-sentinel://[user:pass@]host:port?master_name=NAME[&addr=..] Sentinel
//	redis-cluster://[user:pass@]host:port[?addr=...]                 Cluster
//
// (rediss-sentinel:// and rediss-cluster:// for TLS). Other query
// parameters are go-redis' (ParseURL, ParseFailoverURL, ParseClusterURL).
// It connects on first use.
func Open(rawURL, prefix string, o Options) (*Store, error) {
	rdb, topology, err := connect(rawURL, o.PoolSize)
	if err == nil && o.Tracing {
		if err = redisotel.InstrumentTracing(rdb, redisotel.WithDBStatement(false)); err != nil {
			_ = rdb.Close()
			return nil, fmt.Errorf("trace Redis calls: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	s := New(rdb, prefix)
	s.topology = topology
	replicas := o.MinReplicas
	if replicas < 0 {
		replicas = 0
		if topology != Single {
			replicas = 1
		}
	}
	return s.WithReplicas(replicas, o.ReplicaTimeout), nil
}

func connect(rawURL string, poolSize int) (redis.UniversalClient, Topology, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", urlError(err)
	}
	scheme, topology := u.Scheme, Single
	for _, t := range []Topology{Sentinel, Cluster} {
		if base, ok := strings.CutSuffix(scheme, "-"+string(t)); ok {
			scheme, topology = base, t
		}
	}
	if scheme != "redis" && scheme != "rediss" {
		return nil, "", urlError(fmt.Errorf("unknown scheme %q", u.Scheme))
	}
	u.Scheme = scheme
	switch topology {
	case Sentinel:
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, "", urlError(err)
		}
		if o.MasterName == "" {
			return nil, "", urlError(errors.New("a redis-sentinel:// URL needs ?master_name=NAME"))
		}
		if poolSize > 0 {
			o.PoolSize = poolSize
		}
		return redis.NewFailoverClient(o), topology, nil
	case Cluster:
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, "", urlError(err)
		}
		o.MaintNotificationsConfig = noMaintNotifications()
		if poolSize > 0 {
			o.PoolSize = poolSize
		}
		return redis.NewClusterClient(o), topology, nil
	}
	o, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, "", urlError(err)
	}
	o.MaintNotificationsConfig = noMaintNotifications()
	if poolSize > 0 {
		o.PoolSize = poolSize
	}
	return redis.NewClient(o), topology, nil
}

// noMaintNotifications turns off go-redis' maintenance notifications
// (a Redis Enterprise/8 feature): Redis 7 refuses the handshake, and
// go-redis 9.23 then rewrites its options while other connections read
// them (a data race the race detector reports).
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

func urlError(err error) error {
	return fmt.Errorf("REDIS_URL must be redis://host:port/db, redis-sentinel://host:port?master_name=NAME or redis-cluster://host:port: %w", err)
}

// Topology is the kind of Redis s runs on.
func (s *Store) Topology() Topology { return s.topology }

// MinReplicas is how many replicas must hold an admission before its 202.
func (s *Store) MinReplicas() int { return s.replicas }

// Prefix is the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// eachPrimary runs fn on every primary: each of a Cluster's (at once), or
// the one a single server or a Sentinel group has.
func (s *Store) eachPrimary(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("redisstore: unsupported client %T", s.rdb)
}

// Ping checks that Redis answers (on a Cluster: every primary).
func (s *Store) Ping(ctx context.Context) error {
	return s.eachPrimary(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }

// DropAll deletes every key under s's prefix (on a Cluster, on every
// primary): the end of a benchmark's or a test's installation.
func (s *Store) DropAll(ctx context.Context) error {
	return s.eachPrimary(ctx, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, s.prefix+":*", 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("list keys under %s: %w", s.prefix, err)
		}
		// One key per command: on a Cluster the keys live in many slots.
		for _, k := range batch {
			if err := c.Unlink(ctx, k).Err(); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
		}
		return nil
	})
}

// LogTo sends the Redis client's own messages (a dial that failed, a
// Sentinel naming a new primary) to log at debug level instead of
// standard error: during a failover it writes one per failed connection,
// and the caller reports what they mean (a 503, a retried step).
func LogTo(log *slog.Logger) { redis.SetLogger(clientLog{log}) }

type clientLog struct{ log *slog.Logger }

func (l clientLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "go-redis")
}
