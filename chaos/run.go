package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/internal/proc"
	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/store"
)

const (
	jwtSecret     = "chaos-jwt-secret"
	webhookSecret = "whsec_chaos"
	// redisPrefix is every process's SECKILL_REDIS_PREFIX, so the driver
	// can read the sale's keys (its segments, the waitlist) as the referee.
	redisPrefix = "seckill-chaos"
	// grace is how long past its deadline an order may take to settle
	// (the audit's --grace, and orders_stuck's).
	grace = 30 * time.Second
)

type result struct {
	seed       uint64
	redis      string
	replicated bool
	faults     map[string]int
	admitted   int
	statuses   map[string]int // terminal states the driver saw, of the orders it follows
	lost       int            // 202s answered 404 for a whole minute while settling
	waitLost   int            // waitlist orders answered 404 for a whole minute
	refunds    int
	auditOK    bool
	auditOut   string
	elapsed    time.Duration
	unsettled  int
	openInTime int // followed orders still before their pay_by (+ grace) when the settle window closed
	line       line

	// A lobby run's: its plan, the watcher of its draw, and whether the
	// draw was recorded done in time.
	plan     lobbyPlan
	watch    *drawWatch
	drawDone bool
}

func (r *result) ok() bool { return r.line.OK }

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
	if !r.line.OK {
		verdict += ", run FAILED (" + strings.Join(r.line.Violations, "; ") + ")"
	}
	s := fmt.Sprintf("seed %d (redis %s): %s in %s; faults %s; admitted %d (%d units), orders %v, units %v, refunds %d, unsettled %d, admitted-but-lost %d, units stranded %d",
		r.seed, r.redis, verdict, r.elapsed.Round(time.Second), strings.Join(kinds, " "), r.admitted, r.line.UnitsAdmitted, r.statuses, r.line.Units, r.refunds, r.unsettled, r.line.AdmittedButLost, r.line.UnitsStranded)
	if d := r.line.Draw; d != nil {
		s += fmt.Sprintf("; draw of %d entries %s in %.0fs, outcomes %v, verified %v, entrants misinformed %d, ranks skipped %d, sale ended in the draw %v",
			d.Entries, d.State, d.Seconds, d.Outcomes, *r.line.DrawVerified, *r.line.EntrantsMisinformed, *r.line.RanksSkipped, d.SaleEndedInDraw)
	}
	if r.line.Waitlist > 0 {
		s += fmt.Sprintf(", waitlist joins %d, waitlist orders %d of %d units (paid %d of %d units)", r.line.WaitlistJoins,
			r.line.WaitlistOrders, r.line.WaitlistUnits, r.line.WaitlistOrdersPaid, r.line.WaitlistUnitsPaid)
	}
	return s
}

func runSeed(ctx context.Context, o options, seed uint64) (*result, error) {
	start := time.Now()
	rng := newRand(seed)
	res := &result{seed: seed, redis: o.redis, replicated: o.replicated(), faults: map[string]int{}, statuses: map[string]int{}}
	dir := filepath.Join(o.workDir, "seed-"+strconv.FormatUint(seed, 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "processes.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	fmt.Printf("\n== seed %d, %s (logs: %s)\n", seed, o.variant(), logf.Name())

	redisPort, apiPort, temporalPort, uiPort := proc.FreePort(), proc.FreePort(), proc.FreePort(), proc.FreePort()
	dbName := fmt.Sprintf("seckill_chaos_%d_%d", seed, time.Now().UnixNano()%1e6)
	// The API and the worker reach PostgreSQL (and a single Redis server)
	// through toxiproxy; migrate and audit (the referee) go direct. A
	// Sentinel group's clients ask the Sentinels where the primary is and
	// go there, and a Cluster's follow its redirections, so no proxy can
	// sit in between: their faults are kills.
	tox := newNetwork()
	defer tox.close()
	redisURL := "redis://127.0.0.1:" + strconv.Itoa(redisPort) + "/0"
	apiRedisURL := redisURL
	var (
		group   *redistopo.SentinelGroup
		cluster *redistopo.Cluster
	)
	switch o.redis {
	case "sentinel":
		if group, err = redistopo.StartSentinel(logf); err != nil {
			return nil, err
		}
		defer group.Stop()
		redisURL, apiRedisURL = group.URL(), group.URL()
	case "cluster":
		if cluster, err = redistopo.StartCluster(logf); err != nil {
			return nil, err
		}
		defer cluster.Stop()
		redisURL, apiRedisURL = cluster.URL(), cluster.URL()
	default:
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
	// The draws wait for rounds of the development beacon, served by the
	// driver (never faulted: a beacon down is make test's
	// TestLobby_DrawWaitsForABeaconThatIsDown).
	devBeacon := httptest.NewServer(beacon.NewServer(beacon.DevSigner()))
	defer devBeacon.Close()
	direct := []string{
		"REDIS_URL=" + redisURL,
		"DATABASE_URL=postgres://postgres@127.0.0.1:5432/" + dbName + "?sslmode=disable",
	}
	env := []string{
		"REDIS_URL=" + apiRedisURL,
		"DATABASE_URL=postgres://postgres@" + pgVia + "/" + dbName + "?sslmode=disable",
		"TEMPORAL_ADDRESS=127.0.0.1:" + strconv.Itoa(temporalPort),
		// The dev server on loopback: no TLS, whatever the shell says.
		"TEMPORAL_TLS_CERT=", "TEMPORAL_TLS_KEY=", "TEMPORAL_TLS_CA=", "TEMPORAL_TLS_SERVER_NAME=", "TEMPORAL_API_KEY=",
		"SECKILL_DEV_TEMPORAL_PORT=" + strconv.Itoa(temporalPort),
		"SECKILL_DEV_UI_PORT=" + strconv.Itoa(uiPort),
		"SECKILL_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(apiPort),
		"SECKILL_JWT_SECRET=" + jwtSecret,
		"SECKILL_WEBHOOK_SECRET=" + webhookSecret,
		"SECKILL_REDIS_PREFIX=" + redisPrefix,
		"SECKILL_RELAY_CLAIM_IDLE=2s",
		"SECKILL_REWARM_EVERY=1s",
		"SECKILL_RECONCILE_EVERY=5s",
		"SECKILL_RECONCILE_GRACE=5s",
		// A payment for an admission a Redis wipe lost is refunded after
		// a minute, not the production quarter hour, so the run sees it
		// refunded (the relay here is never minutes behind).
		"SECKILL_PAYMENT_HOLD=1m",
		"SECKILL_CLAIM_RATE=0",
		"SECKILL_LOG_LEVEL=warn",
		"SECKILL_BEACON_URLS=" + devBeacon.URL,
		"SECKILL_BEACON_CHAIN=dev",
	}
	if o.lobby {
		res.plan = planLobby(o, seed)
		env = append(env, "SECKILL_WAITLIST_MAX="+strconv.Itoa(res.plan.waitlistMax))
	}
	var procs []*proc.Proc
	if o.payments == "stripe" {
		httpPort, httpsPort := proc.FreePort(), proc.FreePort()
		stripeBase := "http://127.0.0.1:" + strconv.Itoa(httpPort)
		procs = append(procs, proc.New("stripe-mock", logf, nil, o.stripe,
			"-http-addr", "127.0.0.1:"+strconv.Itoa(httpPort), "-https-addr", "127.0.0.1:"+strconv.Itoa(httpsPort)))
		env = append(env, "SECKILL_PAYMENT_PROVIDER=stripe", "STRIPE_SECRET_KEY=sk_test_chaos", "STRIPE_API_BASE="+stripeBase)
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
	procs = append(procs, temporal, worker, apiProc)
	var redis *proc.Proc
	if o.redis == "single" {
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

	admin, _ := auth.SignToken([]byte(jwtSecret), "chaos-admin", true, time.Hour)
	var (
		saleID   string
		startsAt time.Time
	)
	if o.lobby {
		saleID, startsAt, err = createLobbySale(base, admin, o, res.plan)
	} else {
		saleID, err = createSale(base, admin, o)
	}
	if err != nil {
		return nil, err
	}
	fmt.Printf("sale %s: %d units in %d variants of %d segments, %d buyers of 1..%d units, pay within %s; faults for %s\n",
		saleID, o.units, o.variants, o.segments, o.buyers, o.quantityMax, o.timeout, o.faultsFor)
	if o.lobby {
		fmt.Printf("  %s\n", res.plan)
	}
	sale, _ := strconv.ParseInt(saleID, 10, 64)
	ref, err := openReferee(redisURL, sale, o.segments)
	if err != nil {
		return nil, err
	}
	defer ref.close()
	// Connected (and, on a Cluster, its slots learned) before the buyers
	// come, so the api-borrow watcher sees the opening burst.
	if st, err := ref.stocks(ctx); err != nil || len(st) != o.segments || st[0] < 0 {
		fmt.Printf("  the referee reads segments %v: %v\n", st, err)
	}

	sh := newShop(o, seed, base, saleID)
	var faultsMu sync.Mutex
	countFault := func(kind string) {
		faultsMu.Lock()
		res.faults[kind]++
		faultsMu.Unlock()
	}
	// The waitlist's orders, as they are given (read from Redis as bench
	// does; a waiting buyer's page learns them from GET /waitlist/me).
	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	var following sync.WaitGroup
	if o.followsWaitlist() {
		following.Add(1)
		go func() {
			defer following.Done()
			ref.followWaitlist(followCtx, sh)
		}()
	}

	// The Redis topology's faults, the fault stream's and the draw's, one at
	// a time: two failovers at once would each wait for the other's.
	var topology sync.Mutex

	// Faults, from the seed.
	faultCtx, stopFaults := context.WithCancel(ctx)
	var faultsDone sync.WaitGroup
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		kinds := []string{"api", "worker", "temporal", "redis"}
		switch o.redis {
		case "sentinel":
			kinds = []string{"api", "worker", "temporal", "redis-primary", "redis-replica"}
		case "cluster":
			kinds = []string{"api", "worker", "temporal", "redis-primary"}
		}
		if o.pgRestart {
			kinds = append(kinds, "postgres")
		}
		if o.lobby {
			// The draw's watcher SIGKILLs the worker, at the draw's steps:
			// each kill in the middle of a step holds the draw up for 30 s.
			kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "worker" })
		}
		// The Cluster's victim segment, from a source of its own so that the
		// schedule of the other variants stays the seed's.
		segmentRng := newRand(seed ^ 0xc1a5)
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
			countFault(kind)
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
				topology.Lock()
				if cluster != nil {
					// The primary of one of the sale's segments' slots; the
					// Cluster promotes one of its replicas; the killed node
					// rejoins as a replica a little later.
					segment := segmentRng.IntN(o.segments)
					if err := killClusterPrimary(cluster, ref.stockKey(segment), 1*time.Second+time.Duration(segmentRng.IntN(2000))*time.Millisecond); err != nil {
						fmt.Printf("  %5.1fs redis-primary (segment %d): %v\n", time.Since(start).Seconds(), segment, err)
					} else {
						fmt.Printf("  %5.1fs redis-primary of segment %d failed over, the node rejoined\n", time.Since(start).Seconds(), segment)
					}
					topology.Unlock()
					break
				}
				// SIGKILL the primary; the Sentinels promote a replica; the
				// killed node comes back as a replica of the new primary.
				if err := killPrimary(group); err != nil {
					fmt.Printf("  %5.1fs redis-primary: %v\n", time.Since(start).Seconds(), err)
				}
				topology.Unlock()
			case "redis-replica":
				topology.Lock()
				if n, err := group.KillReplica(); err == nil {
					time.Sleep(2 * time.Second)
					if err := group.Rejoin(n); err != nil {
						fmt.Printf("  %5.1fs redis-replica rejoin: %v\n", time.Since(start).Seconds(), err)
					}
				}
				topology.Unlock()
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
		if o.replicated() {
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
			countFault(f.kind)
			fmt.Printf("  %5.1fs fault: %s\n", time.Since(start).Seconds(), f.kind)
			<-done
		}
	}()

	// The API killed while claims borrow between the sale's segments.
	claimsDone := make(chan struct{})
	if o.segments > 1 && !o.lobby {
		faultsDone.Add(1)
		go func() {
			defer faultsDone.Done()
			kills := ref.killWhileBorrowing(faultCtx, claimsDone, apiProc, base, int64(splitUnits(o.units, o.variants)[0]/o.segments), newRand(seed^0xb0770), start)
			for _, k := range kills {
				countFault("api-borrow")
				res.line.APIBorrowKills = append(res.line.APIBorrowKills, k)
			}
		}()
	}

	// Buyers, paced over most of the fault window (after the opening burst
	// with segments); faults go on to its end. In a lobby run they enter
	// the lobby instead, the draw runs (struck at its steps), and then
	// they learn what it gave them.
	if o.lobby {
		res.watch = &drawWatch{ref: ref, dbName: dbName, sale: sale, units: o.units, segments: o.segments, start: start,
			endsAt: startsAt.Add(res.plan.endsAfter), worker: worker}
		if o.replicated() {
			res.watch.failover = func() error {
				topology.Lock()
				defer topology.Unlock()
				if cluster != nil {
					return killClusterPrimary(cluster, ref.stockKey(res.plan.failoverSegment), 2*time.Second)
				}
				return killPrimary(group)
			}
		}
		drawn := make(chan bool, 1)
		go func() {
			time.Sleep(time.Until(startsAt.Add(-500 * time.Millisecond)))
			drawn <- res.watch.run(ctx, res.plan, drawWithin)
		}()
		sh.enterAll(res.plan.window, startsAt)
		sh.mu.Lock()
		fmt.Printf("  %5.1fs entries done: %d entered, answers %v; the draw runs ...\n", time.Since(start).Seconds(), len(sh.entered), sh.entryAnswers)
		sh.mu.Unlock()
		if res.drawDone = <-drawn; res.drawDone {
			sh.learnOutcomes()
			fmt.Printf("  %5.1fs the buyers learned the draw's outcomes; the losers claimed\n", time.Since(start).Seconds())
		}
	} else {
		sh.buy()
	}
	close(claimsDone)
	faultsDone.Wait()
	stopFaults()
	res.admitted = len(sh.admitted())
	fmt.Printf("  %5.1fs claims done: %d admitted; settling ...\n", time.Since(start).Seconds(), res.admitted)

	if err := proc.WaitHTTP(base+"/readyz", 90*time.Second); err != nil {
		return nil, err
	}
	// Every admitted order (and every order the waitlist gave) must reach
	// PAID or CLOSED. Orders are polled 32 at a time; one that answers 404
	// for a whole minute is gone (its claim was wiped with Redis before the
	// relay read it). With a waitlist, released units keep becoming orders
	// of waiting buyers: the sale has settled when, besides, no order waits
	// for its saga or its payment and no admission waits in the outbox,
	// twice 2 s apart.
	settleFor := 3 * time.Minute
	if o.followsWaitlist() {
		settleFor = 4 * time.Minute
	}
	settleBy := time.Now().Add(settleFor)
	pending := map[string]bool{}
	fromWaitlist := map[string]bool{}
	for id := range sh.admitted() {
		pending[id] = true
	}
	missingSince := map[string]time.Time{}
	payBy := map[string]time.Time{} // of the followed orders still pending, as last read
	quiet := 0
	lastSaid := time.Now()
	for time.Now().Before(settleBy) {
		for _, id := range sh.takeNewWaitlistOrders() {
			pending[id], fromWaitlist[id] = true, true
		}
		ids := make([]string, 0, len(pending))
		for id := range pending {
			ids = append(ids, id)
		}
		type answer struct {
			status string
			code   int
			payBy  time.Time
		}
		answers := make([]answer, len(ids))
		var sweep sync.WaitGroup
		next := atomic.Int64{}
		for range 32 {
			sweep.Add(1)
			go func() {
				defer sweep.Done()
				for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
					answers[i].status, answers[i].code, answers[i].payBy = orderStatus(base, admin, ids[i])
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
					if fromWaitlist[id] {
						res.waitLost++
					} else {
						res.lost++
					}
					delete(pending, id)
				}
			default:
				delete(missingSince, id)
				payBy[id] = a.payBy
			}
		}
		open, backlog := -1, int64(-1)
		if o.followsWaitlist() {
			var err, berr error
			open, err = openOrders(dbName)
			backlog, berr = ref.outboxBacklog()
			if err != nil || berr != nil {
				open, backlog = -1, -1
			}
		}
		if time.Since(lastSaid) >= 15*time.Second {
			lastSaid = time.Now()
			fmt.Printf("  %5.1fs settling: %d followed orders pending", time.Since(start).Seconds(), len(pending))
			if o.followsWaitlist() {
				fmt.Printf(", %d orders open, %d admissions in the outbox, %d waitlist orders so far", open, backlog, len(fromWaitlist))
			}
			fmt.Println()
		}
		if len(pending) == 0 {
			if !o.followsWaitlist() {
				break
			}
			if open == 0 && backlog == 0 {
				if quiet++; quiet >= 2 {
					break
				}
			} else {
				quiet = 0
			}
		}
		time.Sleep(2 * time.Second)
	}
	// An order still before its pay_by (plus the grace) when the window
	// closes is open in time, not unsettled: with a waitlist, every unpaid
	// unit becomes a waiting buyer's new order, with a pay_by of its own,
	// for as long as buyers wait.
	for id := range pending {
		if by := payBy[id]; !by.IsZero() && time.Now().Before(by.Add(grace)) {
			res.openInTime++
			continue
		}
		res.unsettled++
	}
	fmt.Printf("  %5.1fs settled (%d unsettled, %d open before their pay_by); auditing ...\n",
		time.Since(start).Seconds(), res.unsettled, res.openInTime)
	stopFollowing()
	following.Wait()
	// Payers still retrying (a webhook through an outage) finish, or give
	// up, within their own bound.
	if !sh.payments.waitIdle(90 * time.Second) {
		fmt.Println("  some payers were still retrying after 90 s")
	}

	audit := exec.Command(o.binary, "audit", "--sale", saleID, "--wait", "3m", "--grace", grace.String(), "--json")
	audit.Env = append(append(os.Environ(), env...), direct...)
	var out, errOut bytes.Buffer
	audit.Stdout, audit.Stderr = &out, io.MultiWriter(&errOut, logf)
	res.auditOK = audit.Run() == nil
	rep, perr := parseAudit(out.Bytes())
	if perr != nil {
		res.auditOut = out.String() + errOut.String()
	} else {
		res.auditOut = rep.String() + errOut.String()
	}
	fmt.Print(res.auditOut)

	ls, err := ref.readLines(ctx, skus(o.variants))
	if err != nil {
		fmt.Printf("  the referee could not read the waiting lines: %v\n", err)
	}
	m, err := measure(dbName, sh, rep, ls, o.timeout)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	res.refunds = m.Refunds
	res.elapsed = time.Since(start)
	m.Variant, m.Seed, m.Redis, m.Segments, m.Waitlist, m.Payments, m.Lobby = o.variant(), seed, o.redis, o.segments, o.waitlist, o.payments, o.lobby
	m.Admitted, m.Unsettled, m.OpenInTime, m.AuditOK = res.admitted, res.unsettled, res.openInTime, res.auditOK
	m.AdmittedPolledLost, m.WaitlistOrdersPolledLost = res.lost, res.waitLost
	m.WaitlistJoins, m.WaitlistJoinAnswers, m.WaitlistOrdersSeen = sh.joinCounts()
	m.Faults = res.faults
	m.APIBorrowKills = res.line.APIBorrowKills
	if o.lobby {
		d, verified, misinformed, skipped, err := measureDraw(dbName, base, admin, saleID, sh, res.watch, res.plan, res.drawDone)
		if err != nil {
			return nil, fmt.Errorf("measure the draw: %w", err)
		}
		m.Draw, m.DrawVerified, m.EntrantsMisinformed, m.RanksSkipped = d, &verified, &misinformed, &skipped
		res.elapsed = time.Since(start)
	}
	m.ElapsedSeconds = res.elapsed.Round(100 * time.Millisecond).Seconds()
	m.judge(o.replicated())
	res.line = *m
	if o.replicated() && m.AdmittedButLost > 0 {
		// With a replica to fail over to, a 202 is a promise kept.
		fmt.Printf("%d admitted orders were lost with Redis %s: a 202 must survive a primary kill\n", m.AdmittedButLost, o.redis)
	}
	fmt.Println(res.summary())
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
	return res, nil
}

func createSale(base, admin string, o options) (string, error) {
	now := time.Now().UTC()
	fields := map[string]any{
		"name": "chaos", "price_cents": unitPriceCents, "stock": o.units,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(o.timeout / time.Second),
	}
	if o.segments > 1 {
		fields["stock_segments"] = o.segments
	}
	if v := o.saleVariants(); v != nil {
		delete(fields, "price_cents")
		delete(fields, "stock")
		fields["variants"] = v
	}
	if o.quantityMax > 1 {
		fields["limit_per_buyer"] = o.quantityMax
	}
	return postSale(base, admin, fields)
}

// postSale creates a sale of the given fields (POST /api/v1/sales) and
// returns its id.
func postSale(base, admin string, fields map[string]any) (string, error) {
	body, _ := json.Marshal(fields)
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

var pollClient = &http.Client{Timeout: 5 * time.Second}

func orderStatus(base, admin, id string) (string, int, time.Time) {
	req, _ := http.NewRequest("GET", base+"/api/v1/orders/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := pollClient.Do(req)
	if err != nil {
		return "", 0, time.Time{}
	}
	defer func() { _ = resp.Body.Close() }()
	var o struct {
		Status string    `json:"status"`
		PayBy  time.Time `json:"pay_by"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&o)
	return o.Status, resp.StatusCode, o.PayBy
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

// killClusterPrimary SIGKILLs the Cluster's primary serving key, waits for
// one of its replicas to take over, and after rejoinAfter starts the
// killed node again (its nodes.conf makes it a replica). The node is
// started again even when the failover did not complete in time.
func killClusterPrimary(c *redistopo.Cluster, key string, rejoinAfter time.Duration) error {
	old, err := c.KillPrimaryFor(key)
	if err != nil {
		return err
	}
	_, ferr := c.WaitFailover(key, old, 30*time.Second)
	time.Sleep(rejoinAfter)
	if err := c.Rejoin(old); err != nil {
		return fmt.Errorf("rejoin %s: %w (failover: %v)", old.Addr(), err, ferr)
	}
	if ferr != nil {
		return fmt.Errorf("failover: %w", ferr)
	}
	return nil
}
