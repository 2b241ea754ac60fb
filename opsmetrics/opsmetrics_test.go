package opsmetrics_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/opsmetrics"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// scrape registers c on a registry of its own, gathers it, and returns
// every series: metric name -> "label=value,..." -> value.
func scrape(t *testing.T, c *opsmetrics.Collector) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, c.Register(reg))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		series := map[string]float64{}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			series[strings.Join(labels, ",")] = m.GetGauge().GetValue()
		}
		out[mf.GetName()] = series
	}
	return out
}

// healthy checks that every check of the scrape read fine.
func healthy(t *testing.T, m map[string]map[string]float64) {
	t.Helper()
	for _, check := range opsmetrics.Checks {
		require.Equal(t, 1.0, m["seckill_health_scrape_ok"]["check="+check], "check %s read fine", check)
	}
}

type env struct {
	st  *store.Store
	rdb *redis.Client
	rs  *redisstore.Store
}

func newEnv(t *testing.T) env {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	return env{st: st, rdb: rdb, rs: redisstore.New(rdb, prefix)}
}

func label(id int64) string { return "sale=" + strconv.FormatInt(id, 10) }

// near asserts that got is want, within a few seconds of test time.
func near(t *testing.T, want, got float64, what string) {
	t.Helper()
	require.InDelta(t, want, got, 5, what)
}

// seckill_outbox_oldest_age_seconds: the age of the oldest admission each
// live sale's outbox holds (every segment), read or not by a relay, and 0
// once its entries are acknowledged.
func TestOutboxOldestAge_IsTheOldestAdmissionNotYetAcknowledged(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	quiet := testenv.OpenSale(t, e.st, 10)
	testenv.Warm(t, e.rs, quiet, 10)
	busy := testenv.OpenSale(t, e.st, 10)
	testenv.Warm(t, e.rs, busy, 10)
	split := testenv.SegmentedSale(t, e.st, e.rs, 10, 2)
	c := opsmetrics.New(e.st, e.rs, opsmetrics.Options{})

	m := scrape(t, c)
	healthy(t, m)
	require.Equal(t, map[string]float64{label(quiet.ID): 0, label(busy.ID): 0, label(split.ID): 0},
		m["seckill_outbox_oldest_age_seconds"], "empty outboxes: nothing waits")

	// A claim admitted now, then one a relay read and did not acknowledge
	// (still waiting for its saga).
	res, err := e.rs.Claim(ctx, busy.ID, "alice", 1001, "", seckill.TermsBySKU(*busy)(seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	read, err := e.rs.ReadOutbox(ctx, redisstore.Outbox{SaleID: busy.ID}, "relay-1", 10, 10*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, read, 1)
	// Admissions 5 and 7 minutes old, as a stopped relay leaves them: one
	// in the second segment of the split sale.
	addOld := func(stream string, orderID int64, age time.Duration) {
		at := time.Now().Add(-age).UnixMilli()
		require.NoError(t, e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: fmt.Sprintf("%d-0", at),
			Values: []any{"o", orderID, "u", "bob", "s", 0, "t", at}}).Err())
	}
	addOld(e.rs.SaleKeys(quiet.ID).Outbox, 2001, 5*time.Minute)
	addOld(e.rs.SegmentKeys(split.ID, 1).Outbox, 3001, 7*time.Minute)

	m = scrape(t, c)
	healthy(t, m)
	ages := m["seckill_outbox_oldest_age_seconds"]
	require.Len(t, ages, 3)
	require.Less(t, ages[label(busy.ID)], 5.0, "admitted moments ago, read and not acknowledged")
	near(t, 300, ages[label(quiet.ID)], "the stopped relay's entry")
	near(t, 420, ages[label(split.ID)], "the oldest over the sale's segments")

	// The relay acknowledges (and deletes) what it started.
	require.NoError(t, e.rs.AckOutbox(ctx, redisstore.Outbox{SaleID: busy.ID}, []string{read[0].ID}))
	m = scrape(t, c)
	require.Equal(t, 0.0, m["seckill_outbox_oldest_age_seconds"][label(busy.ID)])
}

// startOrder writes order id of sale AWAITING_PAYMENT with pay_by.
func startOrder(t *testing.T, st *store.Store, saleID, id int64, user string, payBy time.Time) {
	t.Helper()
	_, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: id, SaleID: saleID, UserID: user, CreatedAt: time.Now(), PayBy: payBy})
	require.NoError(t, err)
}

// seckill_orders_payment_overdue{,_seconds}: AWAITING_PAYMENT orders past
// their deadline; an order with a payment object has OwnPaymentWait more;
// a decided order is never overdue.
func TestOrdersPaymentOverdue_CountsOrdersAwaitingPaymentPastTheirDeadline(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, e.st, 10)
	c := opsmetrics.New(e.st, e.rs, opsmetrics.Options{})

	m := scrape(t, c)
	healthy(t, m)
	require.Equal(t, 0.0, m["seckill_orders_payment_overdue"][""])
	require.Equal(t, 0.0, m["seckill_orders_payment_overdue_seconds"][""])

	now := time.Now()
	startOrder(t, e.st, sale.ID, 1, "in-time", now.Add(10*time.Minute))
	startOrder(t, e.st, sale.ID, 2, "just-late", now.Add(-30*time.Second)) // within the 1 min grace
	startOrder(t, e.st, sale.ID, 3, "intent", now.Add(-5*time.Minute))     // + OwnPaymentWait (10 min): not late
	_, err := e.st.SavePaymentIntent(ctx, 3, seckill.Intent{Provider: "stripe", ID: "pi_3", ClientSecret: "pi_3_secret"})
	require.NoError(t, err)
	startOrder(t, e.st, sale.ID, 4, "closed", now.Add(-time.Hour))
	_, err = e.st.CloseUnpaid(ctx, 4, seckill.ClosePaymentTimeout, "", "", now)
	require.NoError(t, err)

	m = scrape(t, c)
	require.Equal(t, 0.0, m["seckill_orders_payment_overdue"][""], "none is a minute past its deadline")
	near(t, 30, m["seckill_orders_payment_overdue_seconds"][""], "the order 30 s past its pay_by")

	startOrder(t, e.st, sale.ID, 5, "stuck", now.Add(-10*time.Minute))
	startOrder(t, e.st, sale.ID, 6, "stuck-intent", now.Add(-15*time.Minute)) // 5 min past pay_by + OwnPaymentWait
	_, err = e.st.SavePaymentIntent(ctx, 6, seckill.Intent{Provider: "stripe", ID: "pi_6", ClientSecret: "pi_6_secret"})
	require.NoError(t, err)
	m = scrape(t, c)
	healthy(t, m)
	require.Equal(t, 2.0, m["seckill_orders_payment_overdue"][""])
	near(t, 600, m["seckill_orders_payment_overdue_seconds"][""], "the most overdue: 10 min past its pay_by")
}

// backdate moves a row's timestamp column into the past.
func backdate(t *testing.T, st *store.Store, table, column, key, id string, age time.Duration) {
	t.Helper()
	require.NoError(t, st.Gorm().Exec(fmt.Sprintf(`UPDATE %s SET %s = now() - make_interval(secs => ?) WHERE %s = ?`, table, column, key),
		age.Seconds(), id).Error)
}

func recordEvent(t *testing.T, st *store.Store, id string, orderID int64, outcome seckill.PaymentOutcome) {
	t.Helper()
	_, _, err := st.RecordPaymentEvent(t.Context(), seckill.PaymentRecord{ID: id, Type: string(seckill.PaymentSucceeded), OrderID: orderID,
		PaymentIntentID: "pi_" + id, AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: outcome})
	require.NoError(t, err)
}

// seckill_refunds_pending{,_oldest_seconds}: refunds PENDING, however old;
// a refund the provider confirmed is not.
func TestRefundsPending_CountsRefundsTheProviderHasNotConfirmed(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	c := opsmetrics.New(e.st, e.rs, opsmetrics.Options{})
	m := scrape(t, c)
	healthy(t, m)
	require.Equal(t, 0.0, m["seckill_refunds_pending"][""])
	require.Equal(t, 0.0, m["seckill_refunds_pending_oldest_seconds"][""])

	for i, id := range []string{"evt_old", "evt_new", "evt_done"} {
		recordEvent(t, e.st, id, int64(100+i), seckill.OutcomeReceived)
		_, err := e.st.StartRefund(ctx, store.NewRefund{EventID: id, OrderID: int64(100 + i), PaymentIntentID: "pi_" + id,
			AmountCents: 990, Currency: "usd", Reason: seckill.OutcomeLate})
		require.NoError(t, err)
	}
	backdate(t, e.st, "refunds", "created_at", "event_id", "evt_old", 20*time.Minute)
	backdate(t, e.st, "refunds", "created_at", "event_id", "evt_done", time.Hour)
	require.NoError(t, e.st.FinishRefund(ctx, "evt_done", "re_1"))

	m = scrape(t, c)
	healthy(t, m)
	require.Equal(t, 2.0, m["seckill_refunds_pending"][""])
	near(t, 1200, m["seckill_refunds_pending_oldest_seconds"][""], "the oldest pending: 20 min")
}

// seckill_payment_events_undelivered{,_oldest_seconds}{order}: events
// RECEIVED and never delivered, split by whether their order has a row;
// delivered or ignored events are not counted.
func TestPaymentEventsUndelivered_CountsReceivedEventsNeverDelivered(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, e.st, 10)
	c := opsmetrics.New(e.st, e.rs, opsmetrics.Options{})
	m := scrape(t, c)
	healthy(t, m)
	require.Equal(t, map[string]float64{"order=written": 0, "order=unwritten": 0}, m["seckill_payment_events_undelivered"])
	require.Equal(t, map[string]float64{"order=written": 0, "order=unwritten": 0}, m["seckill_payment_events_undelivered_oldest_seconds"])

	startOrder(t, e.st, sale.ID, 1, "alice", time.Now().Add(time.Hour))
	startOrder(t, e.st, sale.ID, 2, "bob", time.Now().Add(time.Hour))
	recordEvent(t, e.st, "evt_written", 1, seckill.OutcomeReceived)
	backdate(t, e.st, "payment_events", "received_at", "id", "evt_written", 10*time.Minute)
	recordEvent(t, e.st, "evt_unwritten", 999, seckill.OutcomeReceived) // its order has no row
	backdate(t, e.st, "payment_events", "received_at", "id", "evt_unwritten", 20*time.Minute)
	recordEvent(t, e.st, "evt_delivered", 2, seckill.OutcomeReceived)
	backdate(t, e.st, "payment_events", "received_at", "id", "evt_delivered", time.Hour)
	require.NoError(t, e.st.MarkDelivered(ctx, "evt_delivered"))
	recordEvent(t, e.st, "evt_ignored", 0, seckill.OutcomeIgnored)
	backdate(t, e.st, "payment_events", "received_at", "id", "evt_ignored", time.Hour)

	m = scrape(t, c)
	healthy(t, m)
	require.Equal(t, map[string]float64{"order=written": 1, "order=unwritten": 1}, m["seckill_payment_events_undelivered"])
	ages := m["seckill_payment_events_undelivered_oldest_seconds"]
	near(t, 600, ages["order=written"], "the written order's event")
	near(t, 1200, ages["order=unwritten"], "the unwritten order's event")
}

// seckill_redis_replicas and seckill_redis_min_replicas: the primary's
// connected replicas against the replicas an admission must reach, on the
// machine's single Redis and on a Sentinel group and a Cluster.
func TestRedisReplicas_OnOneServerASentinelGroupAndACluster(t *testing.T) {
	testenv.NoLeaks(t)
	t.Run("single", func(t *testing.T) {
		e := newEnv(t)
		m := scrape(t, opsmetrics.New(e.st, e.rs.WithReplicas(2, time.Second), opsmetrics.Options{}))
		healthy(t, m)
		require.Equal(t, 0.0, m["seckill_redis_replicas"][""], "the machine's Redis has no replica")
		require.Equal(t, 2.0, m["seckill_redis_min_replicas"][""])
	})
	redisstore.LogTo(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, kind := range []string{"sentinel", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			topo, err := redistopo.Start(kind, io.Discard)
			require.NoError(t, err)
			t.Cleanup(topo.Stop)
			rs, err := redisstore.Open(topo.URL(), "seckilltest-"+testenv.Suffix(), redisstore.Options{MinReplicas: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = rs.Close() })
			st, _ := testenv.Store(t)
			c := opsmetrics.New(st, rs, opsmetrics.Options{})
			var m map[string]map[string]float64
			require.Eventually(t, func() bool {
				m = scrape(t, c)
				return m["seckill_health_scrape_ok"]["check="+opsmetrics.CheckRedisReplicas] == 1 && m["seckill_redis_replicas"][""] == 2
			}, 20*time.Second, 100*time.Millisecond, "every primary has its two replicas connected")
			require.Equal(t, 1.0, m["seckill_redis_min_replicas"][""], "Sentinel and Cluster wait for one replica by default")
		})
	}
}

// seckill_sale_stranded_units{sale}: the sale's units Redis holds
// nowhere, neither in its stock nor in a claim. A claim holds its unit
// whatever its order's state, no order written, awaiting payment, paid,
// and even CLOSED with its release lost (reconciliation's stale_claim
// releases it); units Redis lost (with a claim or from the stock), an
// order's claim Redis lost until it is written back, and units stuck
// between segments past the grace are stranded.
func TestSaleStrandedUnits_CountsUnitsNeitherInStockNorInAClaim(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, e.st, 10)
	testenv.Warm(t, e.rs, sale, 10)
	c := opsmetrics.New(e.st, e.rs, opsmetrics.Options{}) // counted at every scrape
	stranded := func() float64 {
		t.Helper()
		m := scrape(t, c)
		healthy(t, m)
		v, ok := m["seckill_sale_stranded_units"][label(sale.ID)]
		require.True(t, ok, "the live sale has its series")
		return v
	}
	require.Equal(t, 0.0, stranded(), "a fresh sale: every unit in stock")

	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	for i, user := range []string{"u1", "u2", "u3"} {
		res, err := e.rs.Claim(ctx, sale.ID, user, int64(11+i), "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
	}
	require.Equal(t, 0.0, stranded(), "admitted claims, no order written: held by their claims")
	startOrder(t, e.st, sale.ID, 11, "u1", time.Now().Add(time.Hour))
	startOrder(t, e.st, sale.ID, 12, "u2", time.Now().Add(time.Hour))
	_, err := e.st.ConfirmPayment(ctx, 12, "evt_12", "pi_12", time.Now())
	require.NoError(t, err)
	require.Equal(t, 0.0, stranded(), "orders awaiting payment and paid hold theirs")
	// Redis loses a claim with its count of units (one script writes both).
	require.NoError(t, e.rdb.HDel(ctx, e.rs.SaleKeys(sale.ID).Claims, "u2").Err())
	require.NoError(t, e.rdb.HIncrBy(ctx, e.rs.SaleKeys(sale.ID).Units, seckill.DefaultSKU, -1).Err())
	require.Equal(t, 1.0, stranded(), "a paid order whose claim Redis lost: its unit is in no claim")
	restored, err := e.rs.RestoreClaim(ctx, sale.ID, "u2", 12, seckill.DefaultItem)
	require.NoError(t, err)
	require.True(t, restored)
	require.Equal(t, 0.0, stranded(), "its claim written back (reconciliation's claim_missing)")

	// Order 11 closes in the database; its release in Redis is lost.
	_, err = e.st.CloseUnpaid(ctx, 11, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	require.Equal(t, 0.0, stranded(), "a claim naming a CLOSED order still holds its unit, until reconciliation releases it")
	_, err = e.rs.Release(ctx, sale.ID, "u1", 11, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{100}, Terms: terms})
	require.NoError(t, err)
	require.Equal(t, 0.0, stranded(), "released: back in stock")

	// The claim of u3 (no order written yet) lost without its unit.
	k := e.rs.SaleKeys(sale.ID)
	require.NoError(t, e.rdb.HDel(ctx, k.Claims, "u3").Err())
	require.NoError(t, e.rdb.HIncrBy(ctx, k.Units, seckill.DefaultSKU, -1).Err())
	require.Equal(t, 1.0, stranded(), "an admission Redis lost: its unit is nowhere")
	require.NoError(t, e.rdb.HSet(ctx, k.Claims, "u3", 13).Err())
	require.NoError(t, e.rdb.HIncrBy(ctx, k.Units, seckill.DefaultSKU, 1).Err())
	require.Equal(t, 0.0, stranded())

	require.NoError(t, e.rdb.DecrBy(ctx, e.rs.SaleKeys(sale.ID).Stock, 2).Err())
	require.Equal(t, 2.0, stranded(), "units Redis lost")
	require.NoError(t, e.rdb.IncrBy(ctx, e.rs.SaleKeys(sale.ID).Stock, 3).Err())
	require.Equal(t, -1.0, stranded(), "Redis above the database: negative")

	// A sale of two segments: units taken from segment 0 for segment 1 and
	// never given (the mover stopped) are in flight; past the grace,
	// stranded.
	split := testenv.SegmentedSale(t, e.st, e.rs, 10, 2)
	inFlight := func(id string, units int64, at time.Time) {
		t.Helper()
		src := e.rs.SegmentKeys(split.ID, 0)
		require.NoError(t, e.rdb.DecrBy(ctx, src.Stock, units).Err())
		require.NoError(t, e.rdb.HSet(ctx, src.Moves, id, fmt.Sprintf(`{"units":%d,"dest":1,"at":%d}`, units, at.UnixMilli())).Err())
	}
	splitStranded := func() float64 {
		t.Helper()
		m := scrape(t, c)
		healthy(t, m)
		return m["seckill_sale_stranded_units"][label(split.ID)]
	}
	require.Equal(t, 0.0, splitStranded())
	inFlight("m1", 1, time.Now())
	require.Equal(t, 0.0, splitStranded(), "a move under way")
	inFlight("m2", 2, time.Now().Add(-5*time.Minute))
	require.Equal(t, 2.0, splitStranded(), "a move stopped 5 minutes ago")
}

// The stranded units are counted at most every StrandedEvery: scrapes in
// between export the last count.
func TestSaleStrandedUnits_CountedAtMostEveryInterval(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	sale := testenv.OpenSale(t, e.st, 10)
	testenv.Warm(t, e.rs, sale, 10)
	c := opsmetrics.New(e.st, e.rs, opsmetrics.Options{StrandedEvery: time.Hour})
	require.Equal(t, 0.0, scrape(t, c)["seckill_sale_stranded_units"][label(sale.ID)])
	require.NoError(t, e.rdb.DecrBy(context.Background(), e.rs.SaleKeys(sale.ID).Stock, 2).Err())
	require.Equal(t, 0.0, scrape(t, c)["seckill_sale_stranded_units"][label(sale.ID)], "the count of the last hour")
	fresh := opsmetrics.New(e.st, e.rs, opsmetrics.Options{StrandedEvery: time.Hour})
	require.Equal(t, 2.0, scrape(t, fresh)["seckill_sale_stranded_units"][label(sale.ID)])
}

// Counting a sale's stranded units sends Redis the same commands whether
// the sale has 10 claims or 5,000: claims' units are counted (one field of
// the segment's units hash per variant), the claims never read,
// so the count cannot time out on a sale of hundreds of thousands of
// units. (The scrape runs every check; the others read a constant few
// keys per sale too.)
func TestSaleStrandedUnits_CostDoesNotGrowWithTheClaims(t *testing.T) {
	testenv.NoLeaks(t)
	for _, segments := range []int{1, 2} {
		t.Run(fmt.Sprintf("segments=%d", segments), func(t *testing.T) {
			commands := func(claims int) map[string]int {
				t.Helper()
				e := newEnv(t)
				sale := testenv.SegmentedSale(t, e.st, e.rs, int64(claims)+10, segments)
				claimKeys := admitted(t, e, sale.ID, segments, claims)
				sent := &commandLog{}
				e.rdb.AddHook(sent)
				m := scrape(t, opsmetrics.New(e.st, e.rs, opsmetrics.Options{}))
				healthy(t, m)
				require.Equal(t, 0.0, m["seckill_sale_stranded_units"][label(sale.ID)], "every claim holds its unit")
				byName := map[string]int{}
				for _, args := range sent.all() {
					name := strings.ToLower(fmt.Sprint(args[0]))
					if name == "hello" || name == "client" {
						continue // a new connection's handshake: as many as the pool dials
					}
					byName[name]++
					if len(args) > 1 && claimKeys[fmt.Sprint(args[1])] {
						t.Fatalf("a claims hash is never read: %v", args)
					}
				}
				return byName
			}
			require.Equal(t, commands(10), commands(5000))
		})
	}
}

// admitted makes n admissions in saleID's segments as claim.lua leaves
// them (a claim each, its unit taken from its segment's stock), without a
// round trip per claim, and returns the claims hashes.
func admitted(t *testing.T, e env, saleID int64, segments, n int) map[string]bool {
	t.Helper()
	ctx := t.Context()
	keys := map[string]bool{}
	next := 0
	for q := range segments {
		k := e.rs.SegmentKeys(saleID, q)
		keys[k.Claims] = true
		stock, err := e.rdb.Get(ctx, k.Stock).Int()
		require.NoError(t, err)
		take := min(stock, n-next)
		if take == 0 {
			continue
		}
		fields := make([]any, 0, 2*take)
		for range take {
			fields = append(fields, fmt.Sprintf("buyer-%d", next), 1000+next)
			next++
		}
		require.NoError(t, e.rdb.HSet(ctx, k.Claims, fields...).Err())
		require.NoError(t, e.rdb.HIncrBy(ctx, k.Units, seckill.DefaultSKU, int64(take)).Err())
		require.NoError(t, e.rdb.DecrBy(ctx, k.Stock, int64(take)).Err())
	}
	require.Equal(t, n, next, "the sale has a unit for every claim")
	return keys
}

// commandLog is a go-redis hook recording the arguments of every command
// its client sends, pipelined and transactions included.
type commandLog struct {
	mu   sync.Mutex
	sent [][]any
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd)
		return next(ctx, cmd)
	}
}

func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			l.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (l *commandLog) add(cmd redis.Cmder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, cmd.Args())
}

func (l *commandLog) all() [][]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent)
}

// A check whose store fails reports 0 in seckill_health_scrape_ok and
// exports none of its gauges; the others are unaffected.
func TestHealthScrapeOK_ReportsAFailedCheck(t *testing.T) {
	testenv.NoLeaks(t)
	dsn := testenv.DatabaseURL(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	broken, err := store.Open(t.Context(), dsn, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	require.NoError(t, broken.Close()) // every read fails: the pool is closed
	var logged strings.Builder
	c := opsmetrics.New(broken, rs, opsmetrics.Options{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	m := scrape(t, c)
	for _, check := range []string{opsmetrics.CheckOrders, opsmetrics.CheckRefunds, opsmetrics.CheckPayments, opsmetrics.CheckBeacons} {
		require.Equal(t, 0.0, m["seckill_health_scrape_ok"]["check="+check], check)
	}
	require.Equal(t, 1.0, m["seckill_health_scrape_ok"]["check="+opsmetrics.CheckOutbox])
	require.Equal(t, 1.0, m["seckill_health_scrape_ok"]["check="+opsmetrics.CheckRedisReplicas])
	require.NotContains(t, m, "seckill_orders_payment_overdue")
	require.NotContains(t, m, "seckill_refunds_pending")
	require.Contains(t, m, "seckill_redis_replicas")
	require.Equal(t, 4, strings.Count(logged.String(), "health metrics: check failed"), "each failed check logged: %s", logged.String())
	scrape(t, c)
	require.Equal(t, 4, strings.Count(logged.String(), "health metrics: check failed"), "and not again within the minute")
}
