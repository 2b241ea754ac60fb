// Command redistopo-up starts a Redis Sentinel group or Cluster on
// loopback (redis-server, no persistence), prints its REDIS_URL, and stops
// it on Ctrl-C: for trying seckill, or benchmarking it, on those
// topologies without Docker.
//
//	go run ./internal/redistopo/redistopo-up cluster
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckill/seckill/internal/redistopo"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "sentinel" && os.Args[1] != "cluster") {
		fmt.Fprintln(os.Stderr, "usage: redistopo-up sentinel|cluster")
		os.Exit(2)
	}
	topo, err := redistopo.Start(os.Args[1], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistopo-up:", err)
		os.Exit(1)
	}
	defer topo.Stop()
	fmt.Printf("REDIS_URL=%s\n", topo.URL())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping")
}
