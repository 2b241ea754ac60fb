package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/proc"
	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/store"
)

const (
	jwtSecret     = "chaos-jwt-secret"
	webhookSecret = "whsec_chaos"
)

type result struct {
	seed      uint64
	redis     string
	faults    map[string]int
	admitted  int
	statuses  map[string]int
	lost      int
	refunds   int
	auditOK   bool
	auditOut  string
	elapsed   time.Duration
	unsettled int
}

func (r *result) summary() string {
	kinds := make([]string, 0, len(r.faults))
	for k, n := range r.faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	verdict := "audit PASSED"
	if !r.auditOK {
		verdict = "audit FAILED"
	}
	return fmt.Sprintf("seed %d (redis %s): %s in %s; faults %s; admitted %d, orders %v, refunds %d, unsettled %d, admitted-but-lost %d",
		r.seed, r.redis, verdict, r.elapsed.Round(time.Second), strings.Join(kinds, " "), r.admitted, r.statuses, r.refunds, r.unsettled, r.lost)
}

func runSeed(ctx context.Context, o options, seed uint64) (*result, error) {
	start := time.Now()
	rng := newRand(seed)
	res := &result{seed: seed, redis: o.redis, faults: map[string]int{}, statuses: map[string]int{}}
	dir := filepath.Join(o.workDir, "seed-"+strconv.FormatUint(seed, 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "processes.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	fmt.Printf("\n== seed %d (logs: %s)\n", seed, logf.Name())

	redisPort, apiPort, temporalPort, uiPort := proc.FreePort(), proc.FreePort(), proc.FreePort(), proc.FreePort()
	dbName := fmt.Sprintf("seckill_chaos_%d_%d", seed, time.Now().UnixNano()%1e6)
	// The API and the worker reach PostgreSQL (and a single Redis server)
	// through toxiproxy; migrate and audit (the referee) go direct. A
	// Sentinel group's clients ask the Sentinels where the primary is and
	// go there, so no proxy can sit in between: its faults are kills.
	tox := newNetwork()
	defer tox.close()
	redisURL := "redis://127.0.0.1:" + strconv.Itoa(redisPort) + "/0"
	apiRedisURL := redisURL
	var group *redistopo.SentinelGroup
	if o.redis == "sentinel" {
		if group, err = redistopo.StartSentinel(logf); err != nil {
			return nil, err
		}
		defer group.Stop()
		redisURL, apiRedisURL = group.URL(), group.URL()
	} else {
		redisVia, err := tox.proxy("redis", "127.0.0.1:"+strconv.Itoa(redisPort))
		if err != nil {
			return nil, err
		}
		apiRedisURL = "redis://" + redisVia + "/0"
	}
	pgVia, err := tox.proxy("postgres", "127.0.0.1:5432")
	if err != nil {
		return nil, err
	}
	direct := []string{
		"REDIS_URL=" + redisURL,
		"DATABASE_URL=postgres://postgres@127.0.0.1:5432/" + dbName + "?sslmode=disable",
	}
	env := []string{
		"REDIS_URL=" + apiRedisURL,
		"DATABASE_URL=postgres://postgres@" + pgVia + "/" + dbName + "?sslmode=disable",
		"TEMPORAL_ADDRESS=127.0.0.1:" + strconv.Itoa(temporalPort),
		"SECKILL_DEV_TEMPORAL_PORT=" + strconv.Itoa(temporalPort),
		"SECKILL_DEV_UI_PORT=" + strconv.Itoa(uiPort),
		"SECKILL_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(apiPort),
		"SECKILL_JWT_SECRET=" + jwtSecret,
		"SECKILL_WEBHOOK_SECRET=" + webhookSecret,
		"SECKILL_RELAY_CLAIM_IDLE=2s",
		"SECKILL_REWARM_EVERY=1s",
		"SECKILL_RECONCILE_EVERY=5s",
		"SECKILL_RECONCILE_GRACE=5s",
		"SECKILL_CLAIM_RATE=0",
		"SECKILL_LOG_LEVEL=warn",
	}
	base := "http://127.0.0.1:" + strconv.Itoa(apiPort)

	migrate := exec.Command(o.binary, "migrate")
	migrate.Env = append(append(os.Environ(), env...), direct...)
	migrate.Stdout, migrate.Stderr = logf, logf
	if err := migrate.Run(); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer dropDatabase(dbName)

	temporal := proc.New("temporal", logf, env, o.binary, "devserver", "--db-file", filepath.Join(dir, "temporal.db"))
	worker := proc.New("worker", logf, env, o.binary, "worker")
	apiProc := proc.New("api", logf, env, o.binary, "api")
	procs := []*proc.Proc{temporal, worker, apiProc}
	var redis *proc.Proc
	if group == nil {
		redis = proc.New("redis", logf, nil, "redis-server", "--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir)
		procs = append([]*proc.Proc{redis}, procs...)
	}
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop()
		}
	}()
	for _, p := range procs {
		if err := p.Start(); err != nil {
			return nil, err
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := proc.WaitHTTP(base+"/readyz", 90*time.Second); err != nil {
		return nil, err
	}

	admin, _ := api.SignToken([]byte(jwtSecret), "chaos-admin", true, time.Hour)
	saleID, err := createSale(base, admin, o)
	if err != nil {
		return nil, err
	}
	fmt.Printf("sale %s: %d units, %d buyers, pay within %s; faults for %s\n", saleID, o.units, o.buyers, o.timeout, o.faultsFor)

	// Faults, from the seed.
	faultCtx, stopFaults := context.WithCancel(ctx)
	var faultsDone sync.WaitGroup
	var faultsMu sync.Mutex
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		kinds := []string{"api", "worker", "temporal", "redis"}
		if group != nil {
			kinds = []string{"api", "worker", "temporal", "redis-primary", "redis-replica"}
		}
		if o.pgRestart {
			kinds = append(kinds, "postgres")
		}
		// Every kind once, in the seed's order, then the seed's picks.
		order := append([]string(nil), kinds...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		deadline := time.Now().Add(o.faultsFor)
		for n := 0; time.Now().Before(deadline); n++ {
			wait := 1500*time.Millisecond + time.Duration(rng.IntN(2500))*time.Millisecond
			select {
			case <-faultCtx.Done():
				return
			case <-time.After(wait):
			}
			kind := kinds[rng.IntN(len(kinds))]
			if n < len(order) {
				kind = order[n]
			}
			faultsMu.Lock()
			res.faults[kind]++
			faultsMu.Unlock()
			fmt.Printf("  %5.1fs fault: %s\n", time.Since(start).Seconds(), kind)
			switch kind {
			case "api":
				apiProc.Kill()
			case "worker":
				worker.Kill()
			case "temporal":
				temporal.Kill()
			case "redis":
				redis.Kill() // restarts empty: no persistence
			case "redis-primary":
				// SIGKILL the primary; the Sentinels promote a replica; the
				// killed node comes back as a replica of the new primary.
				if err := killPrimary(group); err != nil {
					fmt.Printf("  %5.1fs redis-primary: %v\n", time.Since(start).Seconds(), err)
				}
			case "redis-replica":
				if n, err := group.KillReplica(); err == nil {
					time.Sleep(2 * time.Second)
					if err := group.Rejoin(n); err != nil {
						fmt.Printf("  %5.1fs redis-replica rejoin: %v\n", time.Since(start).Seconds(), err)
					}
				}
			case "postgres":
				pg := exec.Command("bash", "-c", `pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main restart`)
				pg.Stdout, pg.Stderr = logf, logf
				_ = pg.Run()
			}
		}
	}()

	// Network faults: a second stream, from its own seeded source, so that
	// a toxic can overlap a crash as it would in life.
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		netRng := newRand(seed ^ 0x70c1c)
		targets := []string{"redis", "postgres"}
		if group != nil {
			targets = []string{"postgres"}
		}
		kinds := netFaults(targets...)
		order := append([]netFault(nil), kinds...)
		netRng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		deadline := time.Now().Add(o.faultsFor)
		for n := 0; time.Now().Before(deadline); n++ {
			select {
			case <-faultCtx.Done():
				return
			case <-time.After(500*time.Millisecond + time.Duration(netRng.IntN(1500))*time.Millisecond):
			}
			f := kinds[netRng.IntN(len(kinds))]
			if n < len(order) {
				f = order[n]
			}
			done, err := tox.inject(f, netRng)
			if err != nil {
				fmt.Printf("  %5.1fs network fault %s not injected: %v\n", time.Since(start).Seconds(), f.kind, err)
				continue
			}
			faultsMu.Lock()
			res.faults[f.kind]++
			faultsMu.Unlock()
			fmt.Printf("  %5.1fs fault: %s\n", time.Since(start).Seconds(), f.kind)
			<-done
		}
	}()

	// Buyers, paced over most of the fault window; faults go on to its end.
	orders := buy(base, saleID, seed, o)
	faultsDone.Wait()
	stopFaults()
	res.admitted = len(orders)
	fmt.Printf("  claims done: %d admitted; settling ...\n", len(orders))

	if err := proc.WaitHTTP(base+"/readyz", 90*time.Second); err != nil {
		return nil, err
	}
	// Every admitted order must reach PAID or CLOSED. Orders are polled 32
	// at a time; one that answers 404 for a whole minute is gone (its claim
	// was wiped with Redis before the relay read it).
	settleBy := time.Now().Add(3 * time.Minute)
	pending := map[string]bool{}
	for id := range orders {
		pending[id] = true
	}
	missingSince := map[string]time.Time{}
	for len(pending) > 0 && time.Now().Before(settleBy) {
		ids := make([]string, 0, len(pending))
		for id := range pending {
			ids = append(ids, id)
		}
		type answer struct {
			status string
			code   int
		}
		answers := make([]answer, len(ids))
		var sweep sync.WaitGroup
		next := atomic.Int64{}
		for range 32 {
			sweep.Add(1)
			go func() {
				defer sweep.Done()
				for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
					answers[i].status, answers[i].code = orderStatus(base, admin, ids[i])
				}
			}()
		}
		sweep.Wait()
		now := time.Now()
		for i, id := range ids {
			switch a := answers[i]; {
			case a.status == string(seckill.StatusPaid) || a.status == string(seckill.StatusClosed):
				res.statuses[a.status]++
				delete(pending, id)
			case a.code == http.StatusNotFound:
				if _, seen := missingSince[id]; !seen {
					missingSince[id] = now
				} else if now.Sub(missingSince[id]) > time.Minute {
					res.lost++
					delete(pending, id)
				}
			default:
				delete(missingSince, id)
			}
		}
		time.Sleep(2 * time.Second)
	}
	res.unsettled = len(pending)

	audit := exec.Command(o.binary, "audit", "--sale", saleID, "--wait", "3m", "--grace", "30s")
	audit.Env = append(append(os.Environ(), env...), direct...)
	var out bytes.Buffer
	audit.Stdout, audit.Stderr = &out, io.MultiWriter(&out, logf)
	res.auditOK = audit.Run() == nil && res.unsettled == 0
	if group != nil && res.lost > 0 {
		// With a replica to fail over to, a 202 is a promise kept.
		fmt.Printf("%d admitted orders were lost with a Sentinel group: a 202 must survive a primary kill\n", res.lost)
		res.auditOK = false
	}
	res.auditOut = out.String()
	fmt.Print(res.auditOut)
	res.refunds = countRefunds(dbName)
	res.elapsed = time.Since(start)
	fmt.Println(res.summary())
	return res, nil
}

func createSale(base, admin string, o options) (string, error) {
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "chaos", "price_cents": 990, "stock": o.units,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(o.timeout / time.Second),
	})
	req, _ := http.NewRequest("POST", base+"/api/v1/sales", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var sale struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&sale) != nil {
		return "", fmt.Errorf("create sale: %s", resp.Status)
	}
	return sale.ID, nil
}

// fate of buyer i: 0 pays, 1 fails, 2 never pays.
func fate(seed uint64, i int) int {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%d", seed, i)
	return int(h.Sum64() % 3)
}

// buy sends every buyer's claim (retrying ambiguous answers with the same
// Idempotency-Key, so a retry is never a second claim) and pays or fails
// the admitted ones. It returns the admitted order ids.
func buy(base, saleID string, seed uint64, o options) map[string]int {
	client := &http.Client{Timeout: 5 * time.Second}
	var mu sync.Mutex
	orders := map[string]int{}
	var payments sync.WaitGroup
	spread := o.faultsFor * 3 / 4
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= o.buyers {
					return
				}
				time.Sleep(time.Until(start.Add(spread * time.Duration(i) / time.Duration(o.buyers))))
				user := fmt.Sprintf("buyer-%d-%04d", seed, i)
				token, _ := api.SignToken([]byte(jwtSecret), user, false, time.Hour)
				deadline := time.Now().Add(90 * time.Second)
				for time.Now().Before(deadline) {
					req, _ := http.NewRequest("POST", base+"/api/v1/sales/"+saleID+"/claims", nil)
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Idempotency-Key", "chaos-claim")
					resp, err := client.Do(req)
					if err != nil {
						time.Sleep(300 * time.Millisecond)
						continue
					}
					var body struct {
						OrderID string `json:"order_id"`
					}
					_ = json.NewDecoder(resp.Body).Decode(&body)
					_ = resp.Body.Close()
					if resp.StatusCode == http.StatusAccepted {
						f := fate(seed, i)
						mu.Lock()
						orders[body.OrderID] = f
						mu.Unlock()
						if f < 2 {
							payments.Add(1)
							go func() {
								defer payments.Done()
								pay(client, base, body.OrderID, f == 1, time.Duration(i%2500)*time.Millisecond)
							}()
						}
						break
					}
					if resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusNotFound {
						break
					}
					time.Sleep(300 * time.Millisecond) // 503, 429, 5xx: try again
				}
			}
		}()
	}
	wg.Wait()
	payments.Wait()
	return orders
}

// pay sends a signed payment event for order after delay, retrying until
// the webhook answers 200 (bounded).
func pay(client *http.Client, base, orderID string, fail bool, delay time.Duration) {
	time.Sleep(delay)
	typ := seckill.PaymentSucceeded
	if fail {
		typ = seckill.PaymentFailed
	}
	id, _ := strconv.ParseInt(orderID, 10, 64)
	body := api.EventBody(seckill.PaymentEvent{
		EventID: "evt_" + orderID, Type: typ, PaymentIntentID: "pi_" + orderID, AmountCents: 990, Currency: "usd",
	}, id, time.Now())
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("POST", base+"/api/v1/payments/webhook", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", api.Sign(body, []byte(webhookSecret), time.Now()))
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var pollClient = &http.Client{Timeout: 5 * time.Second}

func orderStatus(base, admin, id string) (string, int) {
	req, _ := http.NewRequest("GET", base+"/api/v1/orders/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := pollClient.Do(req)
	if err != nil {
		return "", 0
	}
	defer func() { _ = resp.Body.Close() }()
	var o struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&o)
	return o.Status, resp.StatusCode
}

func countRefunds(dbName string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/"+dbName+"?sslmode=disable")
	if err != nil {
		return -1
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM refunds").Scan(&n); err != nil {
		return -1
	}
	return n
}

func dropDatabase(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = store.DropDatabase(ctx, "postgres://postgres@127.0.0.1:5432/"+name+"?sslmode=disable")
}

// killPrimary SIGKILLs the group's primary, waits for the Sentinels to
// promote a replica, and brings the killed node back as a replica.
func killPrimary(g *redistopo.SentinelGroup) error {
	old, err := g.KillPrimaryFor("")
	if err != nil {
		return err
	}
	return redistopo.Recover(g, "", old)
}
