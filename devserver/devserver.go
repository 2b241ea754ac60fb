// Package devserver embeds a single-process Temporal server and the
// Temporal Web UI, for `seckill dev`, `seckill devserver` and the
// integration tests. Its state lives in PostgreSQL (databases of its own,
// DefaultShards history shards), in an SQLite file, or in memory.
//
// It is a development server: no TLS (but in tests), no auth, every port
// on loopback.
// Production runs a real Temporal cluster (see docker-compose.yml).
package devserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

const clusterName = "active"

// DefaultShards is the history shard count of a PostgreSQL store. Measured
// here (BENCHMARKS.md): 4 shards did as well as 16, and better than 1, on
// two cores; the server is CPU-bound, not lock-bound.
const DefaultShards = 4

// Config describes one embedded server. The zero value of a port picks a
// free one.
type Config struct {
	// Host is the address every service binds to. Default 127.0.0.1.
	Host string
	// Port is the frontend gRPC port clients dial.
	Port int
	// UIPort is the Web UI's HTTP port; negative disables the UI.
	UIPort int
	// Postgres keeps the server's state in PostgreSQL. Without it, DBFile
	// persists it to this SQLite file, and with neither everything is in
	// memory (lost when the process exits).
	Postgres *Postgres
	DBFile   string
	// Shards is the number of history shards [DefaultShards with
	// PostgreSQL, 1 with SQLite]. It is fixed when the store is first set
	// up: a PostgreSQL store keeps the count it was created with.
	Shards int
	// Namespace is created at start. Default "default".
	Namespace string
	// ExtraNamespaces are created at start too, with the same search
	// attributes (tests give each test a namespace of its own).
	ExtraNamespaces []string
	// SearchAttributes are registered on every namespace at start.
	SearchAttributes map[string]enumspb.IndexedValueType
	// LogLevel of the server's own logs, written as JSON to stderr or
	// LogFile (debug, info, warn, error, fatal). Default error: a dev
	// server that works has nothing to say.
	LogLevel string
	// LogFile, when set, receives the server's logs (appended) instead of
	// stderr. One past MaxLogBytes at start is moved to LogFile.1 (the one
	// before is dropped), so the file stays bounded.
	LogFile string
	// PProfPort serves Go's pprof on this loopback port (0: off), to
	// profile the server under load.
	PProfPort int
	// TLS, when set, serves the frontend over TLS (with client
	// certificates when TLS.ClientCAFile is set): the tests of seckill
	// against a Temporal beyond loopback. `seckill dev` and `seckill
	// devserver` never set it.
	TLS *TLS
	// FrontendInterceptors see every call the frontend serves, after
	// Temporal's own interceptors (tests).
	FrontendInterceptors []grpc.UnaryServerInterceptor
}

// TLS is the frontend's TLS. The server's own clients (its system
// worker, Start's readiness checks, the Web UI) dial the frontend over it
// too: they verify its certificate with RootCAFile and ServerName and,
// when the frontend asks for one, present ClientCertFile.
type TLS struct {
	// CertFile and KeyFile are the frontend's certificate and key (PEM).
	CertFile, KeyFile string
	// ClientCAFile, when set, makes the frontend require a client
	// certificate that this CA signed (mutual TLS).
	ClientCAFile string
	// RootCAFile is the CA of CertFile; ServerName a name in CertFile.
	RootCAFile, ServerName string
	// ClientCertFile and ClientKeyFile are the certificate the server's
	// own clients present (required with ClientCAFile).
	ClientCertFile, ClientKeyFile string
}

// root is t as the server's TLS settings.
func (t *TLS) root() config.RootTLS {
	if t == nil {
		return config.RootTLS{}
	}
	server := config.ServerTLS{CertFile: t.CertFile, KeyFile: t.KeyFile}
	if t.ClientCAFile != "" {
		server.ClientCAFiles, server.RequireClientAuth = []string{t.ClientCAFile}, true
	}
	client := config.ClientTLS{ServerName: t.ServerName, ForceTLS: true}
	if t.RootCAFile != "" {
		client.RootCAFiles = []string{t.RootCAFile}
	}
	return config.RootTLS{
		Frontend: config.GroupTLS{Server: server, Client: client},
		// The system worker (the SDK clients of the server's own
		// workflows) is a client of the frontend like any other.
		SystemWorker: config.WorkerTLS{CertFile: t.ClientCertFile, KeyFile: t.ClientKeyFile, Client: client},
	}
}

// client is the TLS configuration of Start's own clients, nil without
// TLS.
func (t *TLS) client() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.RootCAFile != "" {
		ca, err := os.ReadFile(t.RootCAFile)
		if err != nil {
			return nil, fmt.Errorf("devserver TLS: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("devserver TLS: no certificate in %s", t.RootCAFile)
		}
	}
	if t.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("devserver TLS: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Server is a running embedded Temporal server.
type Server struct {
	temporal temporal.Server
	ui       *uiserver.Server
	uiDone   chan struct{}
	address  string
	uiURL    string
	// phase tells the logger when the server starts and stops (see
	// quietLog).
	phase *logPhase
}

// Start creates the schema and namespace if needed and starts the server
// and, unless disabled, the Web UI. It returns once both accept connections.
func Start(cfg Config) (*Server, error) {
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "error"
	}
	ports, err := freePorts(cfg.Host, 9)
	if err != nil {
		return nil, err
	}
	if cfg.Port == 0 {
		cfg.Port = ports[0]
	}
	if cfg.UIPort == 0 {
		cfg.UIPort = ports[1]
	}

	if err := rotate(cfg.LogFile); err != nil {
		return nil, err
	}
	phase := &logPhase{}
	logger := newQuietLog(log.NewZapLogger(log.BuildZapLogger(log.Config{Level: cfg.LogLevel, Format: "json", OutputFile: cfg.LogFile})), phase)
	var persistence config.Persistence
	if cfg.Postgres != nil {
		setupCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := cfg.Postgres.setup(setupCtx, logger)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("set up temporal's PostgreSQL databases: %w", err)
		}
		history, err := cfg.Postgres.sqlConfig(cfg.Postgres.HistoryURL)
		if err != nil {
			return nil, err
		}
		visibility, err := cfg.Postgres.sqlConfig(cfg.Postgres.VisibilityURL)
		if err != nil {
			return nil, err
		}
		if cfg.Shards <= 0 {
			cfg.Shards = DefaultShards
		}
		persistence = config.Persistence{
			DefaultStore:     "postgres",
			VisibilityStore:  "postgres-visibility",
			NumHistoryShards: int32(cfg.Shards),
			DataStores: map[string]config.DataStore{
				"postgres":            {SQL: history},
				"postgres-visibility": {SQL: visibility},
			},
		}
	} else {
		var err error
		if persistence, err = sqlitePersistence(cfg); err != nil {
			return nil, err
		}
	}

	clientTLS, err := cfg.TLS.client()
	if err != nil {
		return nil, err
	}
	address := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	service := func(grpcPort, membershipPort int) config.Service {
		return config.Service{RPC: config.RPC{
			GRPCPort:       grpcPort,
			MembershipPort: membershipPort,
			BindOnIP:       cfg.Host,
		}}
	}
	serverCfg := &config.Config{
		Global: config.Global{
			PProf:      config.PProf{Port: cfg.PProfPort, Host: cfg.Host},
			TLS:        cfg.TLS.root(),
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: cfg.Host},
			Metrics: &metrics.Config{Prometheus: &metrics.PrometheusConfig{
				ListenAddress: net.JoinHostPort(cfg.Host, strconv.Itoa(ports[2])),
				HandlerPath:   "/metrics",
			}},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             address,
			}},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": service(cfg.Port, ports[3]),
			"history":  service(ports[4], ports[5]),
			"matching": service(ports[6], ports[7]),
			"worker":   service(ports[8], 0),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: address},
	}
	// The worker service needs a membership port of its own too.
	wp, err := freePorts(cfg.Host, 1)
	if err != nil {
		return nil, err
	}
	w := serverCfg.Services["worker"]
	w.RPC.MembershipPort = wp[0]
	serverCfg.Services["worker"] = w

	srv, err := temporal.NewServer(
		temporal.WithConfig(serverCfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithChainedFrontendGrpcInterceptors(cfg.FrontendInterceptors...),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// New search attributes are visible at once, not after a cache
			// refresh, so a freshly started dev server is usable at once.
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
			// Namespaces registered through the frontend (PostgreSQL) reach
			// every service within a second, not ten.
			dynamicconfig.NamespaceCacheRefreshInterval.Key(): []dynamicconfig.ConstrainedValue{{Value: time.Second}},
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	s := &Server{temporal: srv, address: address, phase: phase}
	// Until its membership is ready the frontend refuses every call with
	// Unavailable "Frontend is not healthy yet", and logs each refusal at
	// error level ("service failures"): no client of ours dials it before
	// then.
	if err := waitFrontend(address, clientTLS, 2*time.Minute); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	phase.serving.Store(true)
	if cfg.Postgres != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := registerNamespaces(ctx, address, clientTLS, append([]string{cfg.Namespace}, cfg.ExtraNamespaces...), cfg.SearchAttributes); err != nil {
			_ = srv.Stop()
			return nil, err
		}
	}
	return s.startUI(cfg, address)
}

// sqlitePersistence is the SQLite store of cfg (a file, or memory), with
// its schema and namespaces created.
func sqlitePersistence(cfg Config) (config.Persistence, error) {
	sqlCfg := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		ConnectAttributes: map[string]string{},
	}
	if cfg.DBFile == "" {
		// The SQLite plugin creates the schema of an in-memory database itself.
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
		// A name unique to this process and port keeps two in-memory servers
		// in one process (tests) apart.
		sqlCfg.DatabaseName = fmt.Sprintf("seckill-%d-%d", os.Getpid(), cfg.Port)
	} else {
		sqlCfg.ConnectAttributes["mode"] = "rwc"
		sqlCfg.ConnectAttributes["_journal_mode"] = "WAL"
		sqlCfg.ConnectAttributes["_synchronous"] = "NORMAL"
		sqlCfg.DatabaseName = cfg.DBFile
		if _, err := os.Stat(cfg.DBFile); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(cfg.DBFile), 0o755); err != nil {
				return config.Persistence{}, fmt.Errorf("create directory for %s: %w", cfg.DBFile, err)
			}
			if err := sqlite.SetupSchema(sqlCfg); err != nil {
				return config.Persistence{}, fmt.Errorf("set up temporal schema: %w", err)
			}
		}
	}
	var namespaces []*sqlite.NamespaceConfig
	for _, name := range append([]string{cfg.Namespace}, cfg.ExtraNamespaces...) {
		ns, err := sqlite.NewNamespaceConfig(clusterName, name, false, cfg.SearchAttributes)
		if err != nil {
			return config.Persistence{}, fmt.Errorf("namespace config: %w", err)
		}
		namespaces = append(namespaces, ns)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, namespaces...); err != nil {
		return config.Persistence{}, fmt.Errorf("create namespaces: %w", err)
	}
	shards := cfg.Shards
	if shards <= 0 {
		shards = 1
	}
	return config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: int32(shards),
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}, nil
}

// startUI starts the Web UI unless disabled, and returns s.
func (s *Server) startUI(cfg Config, address string) (*Server, error) {
	if cfg.UIPort > 0 {
		uiCfg := &uiconfig.Config{
			TemporalGRPCAddress: address,
			Host:                cfg.Host,
			Port:                cfg.UIPort,
			EnableUI:            true,
			DefaultNamespace:    cfg.Namespace,
			HideLogs:            true,
			DisableNewsFetch:    true,
			CORS:                uiconfig.CORS{CookieInsecure: true},
		}
		if t := cfg.TLS; t != nil {
			uiCfg.TLS = uiconfig.TLS{CaFile: t.RootCAFile, CertFile: t.ClientCertFile, KeyFile: t.ClientKeyFile, ServerName: t.ServerName, EnableHostVerification: true}
		}
		s.ui = uiserver.NewServer(uioptions.WithConfigProvider(uiCfg))
		s.uiDone = make(chan struct{})
		s.uiURL = "http://" + net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.UIPort))
		go func() {
			defer close(s.uiDone)
			_ = s.ui.Start()
		}()
		if err := waitHTTP(s.uiURL+"/healthz", 30*time.Second); err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("temporal ui: %w", err)
		}
	}
	return s, nil
}

// Address is the frontend's host:port for client.Dial.
func (s *Server) Address() string { return s.address }

// UIURL is the Web UI's base URL, or "" when the UI is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Stop stops the UI and the server. An in-memory server loses its state.
func (s *Server) Stop() error {
	s.phase.stopping.Store(true)
	if s.ui != nil {
		s.ui.Stop()
		<-s.uiDone
	}
	return s.temporal.Stop()
}

// quietLog is the server's logger. It writes at debug level instead of
// error the few errors a single-host server logs at its start and stop
// although nothing is wrong, in that phase only, and only with the cause
// that makes them benign; every other error is written as it is.
//
// Starting, until the frontend serves (waitFrontend):
//
//   - "service failures" with "Frontend is not healthy yet": the server's
//     own worker service creates its SDK clients as soon as it starts, and
//     their GetSystemInfo can reach the frontend before the frontend's
//     membership is ready; the frontend refuses and logs the refusal, the
//     worker service tries again ("error creating sdk client", a warning)
//     and succeeds.
//
// Stopping, once Stop has begun, both with the cause
// membership.ErrInsufficientHosts ("Not enough hosts to serve the
// request"):
//
//   - "error fetching user data from parent": matching's Stop first
//     evicts the host from the membership ring, then stops its task queue
//     partitions one by one. A root partition that stops answers its
//     children's pending user-data long polls at once (as if they had
//     expired, so they ask the new owner), and each child, still loaded,
//     asks again; with no host left in the ring the request cannot be
//     routed. Every loaded child partition (the non-root partitions of
//     each queue, an activity queue's root under its workflow queue,
//     sticky queues: two dozen and more, Temporal's own included) logs it.
//   - "Failed to check Nexus endpoints ownership": the eviction is a
//     membership change, and the matching engine looks up the owner of
//     the Nexus endpoints table in the now empty ring.
//
// Stopping too, with the cause context.Canceled: "Error refreshing
// namespace cache" and the persistence client's "Operation failed with
// internal error." for its ListNamespaces: the namespace registry's
// polling loop may be mid-read when Stop cancels it (seen once in a CI
// run of the README walk-through).
//
// And as each history shard is first acquired (within acquiredQuiet of
// its "Acquired shard"):
//
//   - "Queue reader unable to retrieve tasks" with "shard status
//     unknown": the shard's engine and its queue readers are started
//     before the shard is marked acquired (on purpose, see
//     shard.ContextImpl.acquireShard), and a reader whose first read comes
//     in between is refused; it backs off and reads again. The same error
//     later, when a shard is being re-acquired, is written as an error.
type quietLog struct {
	log.Logger
	phase *logPhase
	shard string // the shard-id of its tags, if any
}

// logPhase says whether the server is still starting or already
// stopping, and when each shard was first acquired.
type logPhase struct {
	serving  atomic.Bool // set once the frontend serves
	stopping atomic.Bool // set when Stop begins
	acquired sync.Map    // shard-id -> time.Time of its first "Acquired shard"
}

// acquiredQuiet is how long after its first acquisition a shard's
// queue readers may still meet "shard status unknown" benignly (it is
// microseconds in practice).
const acquiredQuiet = 5 * time.Second

func newQuietLog(l log.Logger, phase *logPhase) log.Logger {
	// One frame more (quietLog's) between the caller and zap, so
	// logging-call-at still names the caller.
	if sl, ok := l.(log.SkipLogger); ok {
		l = sl.Skip(1)
	}
	return &quietLog{Logger: l, phase: phase}
}

// benign reports whether msg with tags, logged by l, is one of the errors
// quietLog writes at debug level (see its comment).
func (l *quietLog) benign(msg string, tags []tag.Tag) bool {
	p := l.phase
	switch msg {
	case "service failures":
		return !p.serving.Load() && errorTagHas(tags, "Frontend is not healthy yet")
	case "error fetching user data from parent", "Failed to check Nexus endpoints ownership":
		return p.stopping.Load() && errorTagHas(tags, membership.ErrInsufficientHosts.Error())
	case "Error refreshing namespace cache", "Operation failed with internal error.":
		return p.stopping.Load() && errorTagHas(tags, context.Canceled.Error())
	case "Queue reader unable to retrieve tasks":
		at, ok := p.acquired.Load(shardOf(l.shard, tags))
		return ok && time.Since(at.(time.Time)) < acquiredQuiet && errorTagHas(tags, "shard status unknown")
	}
	return false
}

func (l *quietLog) Info(msg string, tags ...tag.Tag) {
	if msg == "Acquired shard" {
		if shard := shardOf(l.shard, tags); shard != "" {
			l.phase.acquired.LoadOrStore(shard, time.Now())
		}
	}
	l.Logger.Info(msg, tags...)
}

func (l *quietLog) Error(msg string, tags ...tag.Tag) {
	if l.benign(msg, tags) {
		l.Logger.Debug(msg, tags...)
		return
	}
	l.Logger.Error(msg, tags...)
}

func (l *quietLog) With(tags ...tag.Tag) log.Logger {
	return &quietLog{Logger: log.With(l.Logger, tags...), phase: l.phase, shard: shardOf(l.shard, tags)}
}

// shardOf is the shard-id among tags, or shard.
func shardOf(shard string, tags []tag.Tag) string {
	for _, t := range tags {
		if t.Key() == "shard-id" {
			shard = fmt.Sprint(t.Value())
		}
	}
	return shard
}

func (l *quietLog) Skip(extraSkip int) log.Logger {
	if sl, ok := l.Logger.(log.SkipLogger); ok {
		return &quietLog{Logger: sl.Skip(extraSkip), phase: l.phase, shard: l.shard}
	}
	return l
}

// errorTagHas reports whether tags carry an error whose text has cause.
func errorTagHas(tags []tag.Tag, cause string) bool {
	for _, t := range tags {
		if t.Key() == "error" && strings.Contains(fmt.Sprint(t.Value()), cause) {
			return true
		}
	}
	return false
}

// Ports are picked below Linux's ephemeral range (32768-60999): a port
// found free there and released is not handed to an outgoing connection
// before the server binds it, as a port from ":0" can be.
const (
	portLow  = 20000
	portHigh = 32000
)

// FreePort returns a port on host that was free a moment ago, from outside
// the ephemeral range.
func FreePort(host string) (int, error) {
	ports, err := freePorts(host, 1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

func freePorts(host string, n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no free port between %d and %d on %s", portLow, portHigh, host)
		}
		port := portLow + rand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	return ports, nil
}

func waitHTTP(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer within %s", url, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitFrontend waits until the frontend at address reports its
// WorkflowService SERVING on gRPC's health service, which it does as it
// starts accepting calls.
func waitFrontend(address string, tlsCfg *tls.Config, timeout time.Duration) error {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("dial the embedded server: %w", err)
	}
	defer func() { _ = conn.Close() }()
	health := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := health.Check(cctx, &healthpb.HealthCheckRequest{Service: workflowServiceName})
		ccancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			// The frontend says SERVING a moment before it lets calls in.
			time.Sleep(20 * time.Millisecond)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the embedded Temporal frontend at %s not serving after %s (last: %v, %v)", address, timeout, resp.GetStatus(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// workflowServiceName is the frontend's service in gRPC's health checks.
const workflowServiceName = "temporal.api.workflowservice.v1.WorkflowService"

// MaxLogBytes bounds Config.LogFile: a file past it at start is rotated.
const MaxLogBytes = 10 << 20

// rotate moves file to file.1 when it is past MaxLogBytes.
func rotate(file string) error {
	if file == "" {
		return nil
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Size() <= MaxLogBytes {
		return nil
	}
	if err := os.Rename(file, file+".1"); err != nil {
		return fmt.Errorf("rotate the Temporal log %s: %w", file, err)
	}
	return nil
}
