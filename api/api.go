// Package api is seckill's HTTP interface (docs/API.md): sales, claims, orders,
// the payment webhook and the operational endpoints, on Fiber.
//
// The claim path never waits on Temporal or Postgres: a cached sale, one
// Lua script in Redis, and the answer.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/contrib/otelfiber/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/pow"
)

// MaxBody is the largest request body accepted (413 BODY_TOO_LARGE above).
const MaxBody = 64 << 10

// Config is what the API needs.
type Config struct {
	Store Store
	Redis Redis
	IDs   *idgen.Generator
	// Sagas cancels order sagas and reports Temporal's health.
	Sagas Sagas
	// Delivery hands the webhook's events to their orders' sagas
	// (delivery.Deliverer, built by app).
	Delivery Deliverer
	// Auth verifies bearer tokens (auth.Provider or auth.Secret, which
	// also signs the dev sign-in's tokens); nil verifies HS256 tokens
	// under JWTSecret.
	Auth auth.Verifier
	// Tracing makes a span of every request but the probes and metrics
	// (the global tracer provider's; see package tracing).
	Tracing bool
	// JWTSecret verifies tokens when Auth is nil.
	JWTSecret     []byte
	WebhookSecret []byte
	Log           *slog.Logger
	// RequestTimeout bounds the work of one request [5s].
	RequestTimeout time.Duration
	// Registry receives the API's metrics and is served on /metrics; nil
	// creates one. Pass the worker's in one-process mode so /metrics has
	// both.
	Registry *prometheus.Registry
	// SoldOutTTL is how long a sold-out answer from Redis is reused
	// without asking again (a returned unit clears it sooner, through
	// pub/sub) [SoldOutTTL].
	SoldOutTTL time.Duration
	// IPLimit limits the requests of one client address to /api/v1 (the
	// payment webhook excepted). Per-user claim limits live in Redis (redisstore.RateLimit).
	IPLimit IPLimit
	// Dev turns on the demo sign-in and the dev checkout (off by default).
	Dev DevTools
	// Beacon is the randomness beacon a new sale's draw waits for
	// (docs/API.md "A draw nobody can bias"): its round is fixed when the
	// sale is created. Nil: a draw uses its secret seed alone
	// (SECKILL_BEACON_URLS=none, v3).
	Beacon *beacon.Chain
	// WaitlistMax bounds each sale's waitlist [DefaultWaitlistMax].
	WaitlistMax int
	// ProofKey signs and checks proof-of-work challenges (docs/API.md
	// "Proof of work"); every replica needs the same. Empty: derived from
	// WebhookSecret (pow.DeriveKey).
	ProofKey []byte
	// Payments makes orders' payment objects (POST /orders/{id}/payment);
	// nil with the dev provider, whose checkout needs none.
	Payments seckill.PaymentIntents
	// ShutdownDelay is how long Serve keeps serving after it is asked to
	// stop, answering /readyz 503 and closing each connection after its
	// answer, so load balancers send the next requests elsewhere [0].
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds how long Serve then waits for the requests
	// in flight to finish [10s].
	ShutdownTimeout time.Duration
	// ReadTimeout is how long a request may take to arrive, counted from
	// the connection's opening or the previous answer [10s].
	ReadTimeout time.Duration
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	app      *fiber.App
	sales    *saleCache
	metrics  *metrics
	soldOut  *soldOutFlags
	watchers *orderWatchers
	funnel   *funnel
	pow      *pow.Key // issues and checks proof-of-work challenges
	// trees keeps each sale's committed entries tree (*draw.Tree) once
	// read: it never changes, and every entrant's proof needs it.
	trees sync.Map
	// chunks keeps the tree chunks the proofs read.
	chunks *chunkCache
	// draining is set when Serve is asked to stop: /readyz answers 503
	// and every answer closes its connection.
	draining atomic.Bool
	// closing is closed when Serve stops serving, after the drain delay,
	// ending the event streams (with a reconnect hint) so the shutdown
	// need not wait for them.
	closing chan struct{}
	// selfURL is this server's own base URL (set by Serve), where the dev
	// checkout sends its webhooks; http is its client.
	selfURL string
	http    *http.Client
}

// New builds the API and its routes.
func New(cfg Config) *Server {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.SoldOutTTL <= 0 {
		cfg.SoldOutTTL = SoldOutTTL
	}
	if cfg.Auth == nil {
		cfg.Auth = auth.NewSecret(cfg.JWTSecret, "", auth.AdminClaim{})
	}
	if cfg.WaitlistMax <= 0 {
		cfg.WaitlistMax = DefaultWaitlistMax
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	reg := cfg.Registry
	if reg == nil {
		reg = NewRegistry()
	}
	s := &Server{
		chunks: newChunkCache(maxCachedChunks),
		cfg:    cfg,
		// Redis learns each sale's number of stock parts from the
		// database, never from keys it may have lost.
		sales: newSaleCache(cfg.Store, func(sale *seckill.Sale) {
			if cfg.Redis != nil {
				cfg.Redis.KnowSegments(sale.ID, sale.StockSegments)
			}
		}),
		metrics:  newMetrics(reg),
		soldOut:  newSoldOutFlags(cfg.SoldOutTTL),
		watchers: newOrderWatchers(),
		funnel:   newFunnel(),
		pow:      proofKey(cfg),
		closing:  make(chan struct{}),
		http:     &http.Client{Timeout: 10 * time.Second},
	}
	reg.MustRegister(newSaleCollector(s))
	s.app = fiber.New(fiber.Config{
		AppName:               "seckill",
		BodyLimit:             MaxBody,
		DisableStartupMessage: true,
		ErrorHandler:          errorHandler(cfg.Log),
		ReadTimeout:           cfg.ReadTimeout,
		// SSE streams and slow clients aside, nothing takes this long.
		IdleTimeout: 60 * time.Second,
	})
	s.app.Use(recover.New())
	s.app.Use(func(c *fiber.Ctx) error {
		if s.draining.Load() {
			// A keep-alive client reconnects, through its load balancer,
			// to a server that is staying.
			c.Context().SetConnectionClose()
		}
		return c.Next()
	})
	s.app.Use(requestid.New(requestid.Config{Header: HeaderRequestID}))
	if cfg.Tracing {
		// One server span per request, continuing a traceparent the
		// client sent; handlers pass c.UserContext() on, so the Redis,
		// database and Temporal calls of the request are its children.
		s.app.Use(otelfiber.Middleware(otelfiber.WithNext(func(c *fiber.Ctx) bool {
			p := c.Path()
			return p == "/healthz" || p == "/readyz" || p == "/metrics"
		})))
	}

	s.app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	s.app.Get("/readyz", s.ready)
	s.app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))

	s.app.Post("/api/v1/payments/webhook", s.webhook)
	v1 := s.app.Group("/api/v1")
	if cfg.IPLimit.Max > 0 {
		v1.Use(ipLimiter(cfg.IPLimit))
	}
	v1.Get("/openapi.json", openAPI)
	v1.Get("/sales", s.listSales)
	v1.Get("/sales/:id", s.getSale)
	v1.Post("/sales", s.authenticate, requireAdmin, s.createSale)
	v1.Get("/sales/:id/stats", s.authenticate, requireAdmin, s.saleStats)
	v1.Post("/sales/:id/variants/:sku/stock", s.authenticate, requireAdmin, s.restock)
	v1.Post("/sales/:id/claims", s.authenticate, s.claim)
	v1.Post("/sales/:id/waitlist", s.authenticate, s.joinWaitlist)
	v1.Get("/sales/:id/challenge", s.authenticate, s.challenge)
	v1.Get("/sales/:id/waitlist/me", s.authenticate, s.waitlistMe)
	v1.Delete("/sales/:id/waitlist/me", s.authenticate, s.leaveWaitlist)
	v1.Post("/sales/:id/lobby", s.authenticate, s.enterLobby)
	v1.Get("/sales/:id/lobby/me", s.authenticate, s.lobbyMe)
	v1.Get("/sales/:id/draw", s.getDraw)
	v1.Get("/sales/:id/draw/entries", s.drawEntries)
	v1.Get("/sales/:id/draw/orders", s.authenticate, requireAdmin, s.drawOrders)
	v1.Get("/orders", s.authenticate, s.listOrders)
	v1.Get("/orders/:id", s.authenticate, s.getOrder)
	v1.Get("/orders/:id/events", s.authenticate, s.orderEvents)
	v1.Post("/orders/:id/cancel", s.authenticate, s.cancelOrder)
	v1.Post("/orders/:id/payment", s.authenticate, s.createPayment)
	s.routePages()
	return s
}

// NewRegistry returns a metrics registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// App exposes the Fiber app (for tests with app.Test, and for mounting).
func (s *Server) App() *fiber.App { return s.app }

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// turns not ready and keeps serving for ShutdownDelay (every answer
// closing its connection), ends the event streams with a reconnect hint,
// stops accepting connections and waits up to ShutdownTimeout for the
// requests in flight.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go s.listen(watchCtx)
	// The claim counts are flushed once more after the last request.
	funnelCtx, stopFunnel := context.WithCancel(context.WithoutCancel(ctx))
	funnelDone := make(chan struct{})
	go func() { defer close(funnelDone); s.funnel.run(funnelCtx, s.cfg.Store, s.cfg.Log) }()
	defer func() { stopFunnel(); <-funnelDone }()
	s.selfURL = "http://" + loopbackAddr(ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- s.app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	began := time.Now()
	s.draining.Store(true)
	s.cfg.Log.Info("shutting down: not ready, still serving", "for", s.cfg.ShutdownDelay.String())
	select {
	case err := <-errc:
		return err
	case <-time.After(s.cfg.ShutdownDelay):
	}
	close(s.closing)
	if err := s.app.ShutdownWithTimeout(s.cfg.ShutdownTimeout); err != nil {
		return err
	}
	err := <-errc
	s.cfg.Log.Info("stopped serving", "after", time.Since(began).Round(time.Millisecond).String())
	return err
}

// reqCtx is the request's context with the request deadline.
func (s *Server) reqCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.RequestTimeout)
}

func (s *Server) ready(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if s.draining.Load() {
		return c.Status(fiber.StatusServiceUnavailable).JSON(map[string]string{"api": "shutting down"})
	}
	checks := map[string]string{"redis": "ok", "postgres": "ok", "temporal": "ok", "auth": "ok"}
	ok := true
	if err := s.cfg.Auth.Ready(); err != nil {
		checks["auth"], ok = "unavailable", false
	}
	if err := s.cfg.Redis.Ping(ctx); err != nil {
		checks["redis"], ok = "unavailable", false
	}
	if err := s.cfg.Store.Ping(ctx); err != nil {
		checks["postgres"], ok = "unavailable", false
	}
	if err := s.cfg.Sagas.CheckHealth(ctx); err != nil {
		checks["temporal"], ok = "unavailable", false
	}
	if !ok {
		c.Status(fiber.StatusServiceUnavailable)
	}
	return c.JSON(checks)
}

// parseID parses an id: a positive 64-bit integer in its canonical
// decimal form, as the API writes ids. "007", "+7" and "7 " name nothing,
// so one thing never has two names; ok is false for them (the caller
// answers 404: no such thing exists).
func parseID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0 && s[0] != '+' && s[0] != '0'
}

func isNotFound(err error) bool { return errors.Is(err, seckill.ErrNotFound) }

// loopbackAddr is addr with a wildcard host (0.0.0.0, ::) replaced by the
// loopback address, so the server can call itself.
func loopbackAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if tcp.IP.To4() == nil {
			ip = net.IPv6loopback
		}
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}
