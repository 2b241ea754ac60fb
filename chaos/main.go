// Command chaos runs a flash sale while it breaks seckill's processes and
// stores, then checks the invariants with `seckill audit` and its own
// counts from PostgreSQL.
//
//	go run ./chaos --seeds 1,2,3
//	go run ./chaos --seeds 1 --segments 4 --waitlist 0.5 --redis cluster --payments stripe
//	go run ./chaos --seeds 3 --lobby --segments 4 --redis sentinel
//
// Per seed (reproducible: the seed picks the faults, their moments and the
// buyers' fates): a sale of --units units meets --buyers buyers; a third
// pay, a third fail, a third never pay, with a --timeout deadline. While
// claims and payments flow, every 1.5-4 s one fault strikes: the API, the
// worker (relay included) or the Temporal dev server (--db-file) is killed
// with SIGKILL and restarted, Redis (a server of this run's own, without
// persistence) is killed and restarted empty, or PostgreSQL is restarted.
// With --redis sentinel, Redis is a Sentinel group instead: its primary is
// killed (the Sentinels fail over, the killed node returns as a replica)
// or a replica is. With --redis cluster, Redis is a Cluster of three
// primaries with replicas (internal/redistopo): the primary serving the
// slot of one of the sale's stock segments, drawn by the seed, is killed, the
// Cluster fails over, and the node rejoins as a replica 1-3 s later. With
// a replica to fail over to, no 202 may be lost (admitted_but_lost must be
// 0). Alongside, toxiproxy (in this process, between the API and worker
// and their stores) injects latency, stalls that end in a closed
// connection, and connection resets on the way to PostgreSQL, and to
// Redis when it is one server.
//
// --segments N creates the sale with stock_segments N. Then the sale opens
// with a burst (the first min(buyers/3, 2*units) buyers at once, the rest
// paced as usual) and one more fault, api-borrow: a watcher reading the
// segments' stocks every 2 ms SIGKILLs the API while claims borrow between
// segments (a segment empty while another still holds units, a segment down to a
// tenth of its share, or a move in flight), at most twice per run, 5 s
// apart; it is restarted like any other.
//
// --waitlist SHARE (0..1): that share of the buyers answered SOLD_OUT join
// the sale's waitlist at once (POST /api/v1/sales/{id}/waitlist), as the
// shop page offers; the orders the waitlist gives them (read from Redis,
// as bench does) are paid, failed or left by the same fate rule as the
// 202s, and the run settles only when no order waits for its saga or its
// payment and no admission waits in the outbox.
//
// --payments stripe starts stripe-mock (scripts/ensure-stripe-mock.sh
// installs it) and runs seckill with SECKILL_PAYMENT_PROVIDER=stripe:
// payers ask for the order's PaymentIntent (POST /api/v1/orders/{id}/payment)
// and then deliver a signed payment_intent.succeeded (or .payment_failed)
// webhook naming it and metadata.order_id.
//
// --lobby starts the sale with a lobby (docs/API.md "Fair start"; no proof
// of work): the buyers enter it over the first half of its window (6 s +
// 6 ms per buyer; an entry is retried through faults until starts_at), and
// at starts_at the draw runs. SECKILL_WAITLIST_MAX is the units, so the
// draw admits ranks 1..units, queues as many more and loses the rest. A
// watcher reads the draw's progress in Redis (claims plus waitlist entries)
// every 2 ms and its record in PostgreSQL every 25 ms, and SIGKILLs the
// worker at the steps the seed picks (its own stream): always once at a
// rank, in the middle of a settle step, where a batch is cut off and must
// be retried (Temporal times the step out 30 s after its first heartbeat);
// then, for seeds 1, 4, 7, ..., once more at the lobby's close (while the
// draw ranks) or once the draw is recorded done (before FinishDraw opens
// the sale in Redis); for seeds 2, 5, 8, ..., once more while the draw's
// admissions borrow between segments (--segments), else at another rank.
// The fault stream above then kills every process but the worker. With
// --redis sentinel or cluster the Redis primary (on a Cluster, of a segment
// the seed picks) also fails over at a rank the seed picks. Seeds 3, 6, 9,
// ... end the sale inside the draw: ends_at is starts_at + 60-70 s, and
// from the SIGKILL at the rank the worker is kept down (killed again as
// soon as it restarts) until the sale has ended, so the end falls after
// that rank's admission and before the rest of the draw whenever the draw
// reaches the rank before ends_at (else earlier in the draw); the line says
// whether the sale ended before the draw was done
// (draw.sale_ended_in_draw). Once the draw is done, every buyer asks GET
// /lobby/me: a winner pays, fails or leaves the order it names by the fate
// rule of the 202s, an entrant told LOST whose fate is to pay claims once
// (a SOLD_OUT joins the waitlist by --waitlist's share), and WAITING
// entrants get their orders from the waitlist, followed as with --waitlist.
//
// Each seed's run ends with one JSON line, the only line of the output that
// starts with "{": variant, seed, admitted (202s), paid, closed,
// admitted_but_lost (202s whose order never got a row), unsettled,
// payments_kept_without_refund (successful payment events that neither paid
// their order through their PaymentIntent nor have a SUCCEEDED refund,
// orders without a row included), units_stranded (the database's available
// minus what Redis holds, signed, plus the units left in stock while buyers
// wait before the sale ends, over the variants; variants_stranded names
// each variant's), orders_stuck (QUEUED or AWAITING_PAYMENT past
// pay_by plus the grace), audit_ok (`seckill audit --wait` passed), ok (all
// of these held), and the faults, refunds, waitlist and stock figures. A
// lobby run adds draw_verified (the published draw, read through the API
// with drawcli's client and an admin token as `seckill draw verify` reads
// it, passes draw.Verify), entrants_misinformed (entrants told WON whose
// order has no row of theirs; holding an order the draw admitted,
// orders.drawn, and told LOST, or WAITING without it, or another order;
// told WAITING with an order that has no row; never settled; and the same
// of what GET /lobby/me answered each buyer after the draw, each entrant
// once) and ranks_skipped (ranks that fit the stock, 1..k, not WON, except
// ranks LOST after the last rank WON when the sale ended before the draw
// was recorded done: the draw admits in rank order, so the end explains
// those and nothing else), and "draw", which says what the draw did, where
// each of its faults struck, what verify found and whom the two counts
// name. ok then also needs the draw done, draw_verified, both counts 0, and
// every entry answered 201 known to GET /lobby/me.
// The command exits non-zero when a run is not ok.
//
// Everything listens on loopback; every loop is bounded in count and time.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/stripemock"
	"github.com/seckill/seckill/redisstore"
)

type options struct {
	seeds     []uint64
	units     int
	buyers    int
	timeout   time.Duration
	faultsFor time.Duration
	pgRestart bool
	binary    string
	keep      bool
	workDir   string
	redis     string  // "single", "sentinel" or "cluster"
	segments  int     // the sale's stock_segments
	waitlist  float64 // share of SOLD_OUT buyers who join the waitlist
	payments  string  // "dev" or "stripe"
	stripe    string  // the stripe-mock binary (--payments stripe)
	lobby     bool    // the sale starts with a lobby and a draw
	// variants: the sale's variants (the units split across them);
	// quantityMax: its limit_per_buyer, each buyer claiming (or waiting
	// for) a variant and a quantity 1..quantityMax drawn from the seed.
	variants    int
	quantityMax int
}

// variant names the configuration of a run, as the JSON line reports it.
func (o options) variant() string {
	v := fmt.Sprintf("redis=%s segments=%d waitlist=%g payments=%s", o.redis, o.segments, o.waitlist, o.payments)
	if o.variants > 1 || o.quantityMax > 1 {
		v += fmt.Sprintf(" variants=%d quantity-max=%d", o.variants, o.quantityMax)
	}
	if o.lobby {
		v += " lobby"
	}
	return v
}

// followsWaitlist: the sale's waitlist gives orders the buyers must learn
// of (their --waitlist share joins it, or the draw queues entrants on it),
// and the run settles only once no order waits and no admission is in the
// outbox.
func (o options) followsWaitlist() bool { return o.waitlist > 0 || o.lobby }

// replicated: Redis has a replica to fail over to, so no 202 may be lost.
func (o options) replicated() bool { return o.redis != "single" }

func main() {
	var o options
	seeds := flag.String("seeds", "1,2,3", "comma-separated seeds, one run each")
	flag.IntVar(&o.units, "units", 300, "units on sale")
	flag.IntVar(&o.buyers, "buyers", 3000, "buyers")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Second, "payment timeout of the sale")
	flag.DurationVar(&o.faultsFor, "faults-for", 40*time.Second, "how long faults are injected per run")
	flag.BoolVar(&o.pgRestart, "pg-restart", true, "include PostgreSQL restarts (pg_ctlcluster; the machine's server)")
	flag.StringVar(&o.binary, "binary", "", "seckill binary (default: build one)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (logs, Temporal's database)")
	flag.StringVar(&o.redis, "redis", "single", `"single": one Redis server, killed and restarted empty (the disaster case); "sentinel": a primary, two replicas and three Sentinels, whose primary is killed and failed over and whose replicas are killed; "cluster": a Redis Cluster of three primaries with replicas, the primary of a sale segment's slot killed and failed over`)
	flag.IntVar(&o.segments, "segments", 1, "the sale's stock_segments (1..64); above 1 adds the opening burst and the api-borrow fault")
	flag.Float64Var(&o.waitlist, "waitlist", 0, "share (0..1) of the buyers answered SOLD_OUT who join the sale's waitlist at once")
	flag.BoolVar(&o.lobby, "lobby", false, "the sale starts with a lobby: the buyers enter it, the draw runs at starts_at while the worker is SIGKILLed at its steps (and, on Sentinel or Cluster, the Redis primary fails over); seeds 3, 6, 9, ... end the sale inside the draw")
	flag.StringVar(&o.payments, "payments", "dev", `"dev": signed webhooks for the dev provider; "stripe": seckill on stripe-mock, payers pay through the order's PaymentIntent`)
	flag.IntVar(&o.variants, "variants", 1, "the sale's variants (1..16), the units split across them; each buyer claims one, drawn from the seed")
	flag.IntVar(&o.quantityMax, "quantity-max", 1, "the sale's limit_per_buyer (1..100); each buyer claims (or waits for) a quantity 1..this, drawn from the seed")
	flag.Parse()
	var bad []string
	if o.variants < 1 || o.variants > 16 || o.variants > o.units {
		bad = append(bad, fmt.Sprintf("--variants must be 1..16 and at most --units, got %d", o.variants))
	}
	if o.quantityMax < 1 || o.quantityMax > 100 {
		bad = append(bad, fmt.Sprintf("--quantity-max must be 1..100, got %d", o.quantityMax))
	}
	if o.lobby && (o.variants > 1 || o.quantityMax > 1) {
		bad = append(bad, "--lobby runs one variant of quantity 1: its entries carry no variant yet")
	}
	if o.redis != "single" && o.redis != "sentinel" && o.redis != "cluster" {
		bad = append(bad, fmt.Sprintf("--redis must be single, sentinel or cluster, got %q", o.redis))
	}
	if o.segments < 1 || o.segments > 64 {
		bad = append(bad, fmt.Sprintf("--segments must be 1..64, got %d", o.segments))
	}
	if o.waitlist < 0 || o.waitlist > 1 {
		bad = append(bad, fmt.Sprintf("--waitlist must be a share 0..1, got %g", o.waitlist))
	}
	if o.payments != "dev" && o.payments != "stripe" {
		bad = append(bad, fmt.Sprintf("--payments must be dev or stripe, got %q", o.payments))
	}
	for _, s := range strings.Split(*seeds, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			bad = append(bad, fmt.Sprintf("bad seed %q", s))
			continue
		}
		o.seeds = append(o.seeds, n)
	}
	if len(bad) > 0 {
		fmt.Fprintln(os.Stderr, "chaos:", strings.Join(bad, "; "))
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "seckill-chaos-")
	if err != nil {
		return err
	}
	o.workDir = dir
	if !o.keep {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	// The referee's Redis client would log every failed dial of a failover
	// between the run's lines.
	redisstore.LogTo(slog.New(slog.DiscardHandler))
	if o.binary == "" {
		o.binary = filepath.Join(dir, "seckill")
		fmt.Println("building seckill ...")
		build := exec.Command("go", "build", "-o", o.binary, "./cmd/seckill")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	if o.pgRestart {
		if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
			fmt.Println("pg_ctlcluster not found: PostgreSQL restarts left out")
			o.pgRestart = false
		}
	}
	if o.payments == "stripe" {
		if o.stripe, err = stripemock.Binary(); err != nil {
			fmt.Println("no stripe-mock: installing it (scripts/ensure-stripe-mock.sh) ...")
			install := exec.Command("bash", "scripts/ensure-stripe-mock.sh")
			install.Stdout, install.Stderr = os.Stdout, os.Stderr
			if err := install.Run(); err != nil {
				return fmt.Errorf("install stripe-mock: %w", err)
			}
			if o.stripe, err = stripemock.Binary(); err != nil {
				return err
			}
		}
	}
	failed := 0
	var results []*result
	for _, seed := range o.seeds {
		r, err := runSeed(context.Background(), o, seed)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		results = append(results, r)
		if !r.ok() {
			failed++
		}
	}
	fmt.Println()
	fmt.Println("== chaos summary (" + o.variant() + ")")
	for _, r := range results {
		fmt.Println(r.summary())
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs violated an invariant", failed, len(results))
	}
	fmt.Printf("%d runs, every invariant held\n", len(results))
	return nil
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5eccc111)) }
