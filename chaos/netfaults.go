package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/seckill/seckill/internal/proc"
)

// network puts a toxiproxy between seckill's processes and their stores,
// in this process: the API and the worker reach Redis and PostgreSQL only
// through it, while the driver, migrate and audit go direct, so a network
// fault hits seckill and never the referee.
type network struct {
	server  *toxiproxy.ApiServer
	proxies map[string]*toxiproxy.Proxy // "redis", "postgres"
}

func newNetwork() *network {
	return &network{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		proxies: map[string]*toxiproxy.Proxy{},
	}
}

// proxy starts a proxy to upstream and returns the address it listens on.
func (n *network) proxy(name, upstream string) (string, error) {
	listen := "127.0.0.1:" + strconv.Itoa(proc.FreePort())
	p := toxiproxy.NewProxy(n.server, name, listen, upstream)
	if err := n.server.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("toxiproxy %s: %w", name, err)
	}
	n.proxies[name] = p
	return listen, nil
}

func (n *network) close() { _ = n.server.Collection.Clear() }

// netFault is one kind of network trouble, applied to one store's proxy
// for a while and then lifted.
type netFault struct {
	kind   string // as counted in the summary, e.g. "redis-latency"
	target string // proxy name
	toxic  string // toxiproxy JSON
}

// netFaults are the kinds the suite draws from: latency with jitter on
// every reply, a stall that ends in a closed connection, and connections
// reset by the peer, for each of targets ("redis", "postgres").
func netFaults(targets ...string) []netFault {
	var out []netFault
	for _, target := range targets {
		out = append(out,
			netFault{target + "-latency", target,
				`{"type":"latency","stream":"downstream","attributes":{"latency":150,"jitter":100}}`},
			netFault{target + "-timeout", target,
				`{"type":"timeout","stream":"downstream","attributes":{"timeout":1500}}`},
			netFault{target + "-reset", target,
				`{"type":"reset_peer","stream":"upstream","attributes":{"timeout":200}}`},
		)
	}
	return out
}

// inject applies f for a window drawn from rng (0.5-2.5 s), then lifts it.
// It returns at once; done is closed when the toxic is gone.
func (n *network) inject(f netFault, rng *rand.Rand) (done <-chan struct{}, err error) {
	p, ok := n.proxies[f.target]
	if !ok {
		return nil, fmt.Errorf("no proxy %q", f.target)
	}
	name := f.kind + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	body := `{"name":"` + name + `",` + strings.TrimPrefix(f.toxic, "{")
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return nil, fmt.Errorf("toxic %s: %w", f.kind, err)
	}
	window := 500*time.Millisecond + time.Duration(rng.IntN(2000))*time.Millisecond
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		time.Sleep(window)
		_ = p.Toxics.RemoveToxic(context.Background(), name)
	}()
	return ch, nil
}
