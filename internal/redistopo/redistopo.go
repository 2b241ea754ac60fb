// Package redistopo starts real Redis topologies for tests, the chaos
// suite and the benchmark: a Sentinel group (a primary, two replicas and
// three Sentinels) and a Cluster (three primaries with two replicas each),
// from Debian's redis-server on private loopback ports, without
// persistence, each in a directory of its own. It kills primaries with
// SIGKILL, waits for the failover and brings the killed node back as a
// replica, as an operator would.
//
// It talks to the servers directly (to ask who is primary); seckill's own
// code reaches Redis only through redisstore.
package redistopo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Topology is a Sentinel group or a Cluster, as failover tests use it.
type Topology interface {
	// URL is its REDIS_URL.
	URL() string
	// KillPrimaryFor SIGKILLs the primary serving key and returns it.
	KillPrimaryFor(key string) (*Node, error)
	// WaitFailover waits until a running node other than old serves key
	// as primary, and returns it.
	WaitFailover(key string, old *Node, within time.Duration) (*Node, error)
	// Rejoin starts a killed node again, as a replica.
	Rejoin(*Node) error
	// Stop kills every process and removes its files.
	Stop()
}

// Start starts a topology of kind "sentinel" or "cluster".
func Start(kind string, log io.Writer) (Topology, error) {
	switch kind {
	case "sentinel":
		return StartSentinel(log)
	case "cluster":
		return StartCluster(log)
	}
	return nil, fmt.Errorf("redistopo: unknown topology %q (sentinel or cluster)", kind)
}

// Recover waits for the failover of key's primary old (killed) and brings
// old back as a replica, as an operator would.
func Recover(t Topology, key string, old *Node) error {
	if _, err := t.WaitFailover(key, old, 30*time.Second); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	if err := t.Rejoin(old); err != nil {
		return fmt.Errorf("rejoin %s: %w", old.Addr(), err)
	}
	return nil
}

// Node is one redis-server (or Sentinel) process.
type Node struct {
	Port int
	dir  string
	log  io.Writer
	args []string // the arguments it was first started with
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Addr is the node's host:port.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

func (n *Node) start(extra ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("redis on %d is running", n.Port)
	}
	args := append(append([]string{}, n.args...), extra...)
	cmd := exec.Command("redis-server", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = n.dir, n.log, n.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server (Debian: apt-get install redis-server): %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done
	return waitPing(n.Addr(), 10*time.Second)
}

// Kill ends the node with SIGKILL, like a crash, and waits until it is gone.
func (n *Node) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.done
	n.cmd = nil
}

// Running reports whether the node's process is up.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

func waitPing(addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil || strings.HasPrefix(err.Error(), "LOADING") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis on %s did not answer within %s: %w", addr, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns n loopback ports that were free a moment ago, each
// with its cluster bus port (+10000) free too.
func freePorts(n int) []int {
	var out []int
	taken := map[int]bool{}
	for len(out) < n {
		p := 20000 + rand.IntN(12000)
		if taken[p] || !free(p) || !free(p+10000) {
			continue
		}
		taken[p] = true
		out = append(out, p)
	}
	return out
}

func free(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// baseArgs are every data node's: loopback, no persistence, its own dir.
func baseArgs(port int, dir string) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--protected-mode", "no", "--loglevel", "warning",
		// A replica syncs at once (no 5 s wait for others to share the
		// transfer): one that never synced cannot be promoted.
		"--repl-diskless-sync-delay", "0"}
}

func stopAll(nodes []*Node) {
	for _, n := range nodes {
		n.Kill()
	}
}

// eventually polls f until it returns nil or within passes.
func eventually(within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tempDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "seckill-"+name+"-")
	if err != nil {
		return "", err
	}
	return dir, nil
}

func nodeDir(root string, port int) (string, error) {
	dir := filepath.Join(root, strconv.Itoa(port))
	return dir, os.MkdirAll(dir, 0o755)
}

var errNotYet = errors.New("not yet")

// Single is one redis-server of its own (for measurements that need a
// server configured unlike the machine's, e.g. with AOF).
type Single struct {
	*Node
	root string
}

// StartSingle starts one redis-server with extra arguments (e.g.
// "--appendonly", "yes", "--appendfsync", "always").
func StartSingle(log io.Writer, extra ...string) (*Single, error) {
	root, err := tempDir("single")
	if err != nil {
		return nil, err
	}
	p := freePorts(1)[0]
	n := &Node{Port: p, dir: root, log: log, args: append(baseArgs(p, root), extra...)}
	if err := n.start(); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	return &Single{Node: n, root: root}, nil
}

// URL is the server's REDIS_URL.
func (s *Single) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop kills the server and removes its directory.
func (s *Single) Stop() {
	s.Kill()
	_ = os.RemoveAll(s.root)
}
