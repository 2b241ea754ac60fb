// Command chaos runs a flash sale while it breaks seckill's processes and
// stores, then checks the six invariants with `seckill audit`.
//
//	go run ./chaos --seeds 1,2,3
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
// or a replica is, and no 202 may be lost (admitted-but-lost must be 0).
// Alongside, toxiproxy (in this process, between the API and worker and
// their stores) injects latency, stalls that end in a closed connection,
// and connection resets on the way to Redis and to PostgreSQL.
// Then the system settles and `seckill audit --wait` must pass.
//
// Everything listens on loopback; every loop is bounded in count and time.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	redis     string // "single" or "sentinel"
}

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
	flag.StringVar(&o.redis, "redis", "single", `"single": one Redis server, killed and restarted empty (the disaster case); "sentinel": a primary, two replicas and three Sentinels, whose primary is killed and failed over and whose replicas are killed`)
	flag.Parse()
	if o.redis != "single" && o.redis != "sentinel" {
		fmt.Fprintf(os.Stderr, "chaos: --redis must be single or sentinel, got %q\n", o.redis)
		os.Exit(2)
	}
	for _, s := range strings.Split(*seeds, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos: bad seed %q\n", s)
			os.Exit(2)
		}
		o.seeds = append(o.seeds, n)
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
	failed := 0
	var results []*result
	for _, seed := range o.seeds {
		r, err := runSeed(context.Background(), o, seed)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		results = append(results, r)
		if !r.auditOK {
			failed++
		}
	}
	fmt.Println()
	fmt.Println("== chaos summary")
	for _, r := range results {
		fmt.Println(r.summary())
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs violated an invariant", failed, len(results))
	}
	fmt.Printf("%d runs, every audit passed\n", len(results))
	return nil
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5eccc111)) }
