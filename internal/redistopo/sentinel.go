package redistopo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the Sentinels know the group's primary by.
const MasterName = "seckill"

// SentinelGroup is a primary, two replicas and three Sentinels (quorum 2)
// that fail over a primary gone for a second.
type SentinelGroup struct {
	Data      []*Node // the redis servers; which is primary changes
	Sentinels []*Node
	root      string
}

// StartSentinel starts a Sentinel group, its output going to log.
func StartSentinel(log io.Writer) (_ *SentinelGroup, err error) {
	root, err := tempDir("sentinel")
	if err != nil {
		return nil, err
	}
	// Stopped on failure, whatever the return says (a nil group).
	g := &SentinelGroup{root: root}
	defer func() {
		if err != nil {
			g.Stop()
		}
	}()
	ports := freePorts(6)
	for i, p := range ports[:3] {
		dir, err := nodeDir(root, p)
		if err != nil {
			return nil, err
		}
		n := &Node{Port: p, dir: dir, log: log, args: baseArgs(p, dir)}
		g.Data = append(g.Data, n)
		var extra []string
		if i > 0 {
			extra = []string{"--replicaof", "127.0.0.1", strconv.Itoa(ports[0])}
		}
		if err := n.start(extra...); err != nil {
			return nil, err
		}
	}
	if err := waitReplicas(g.Data[0].Addr(), 2, 10*time.Second); err != nil {
		return nil, err
	}
	for _, p := range ports[3:] {
		dir, err := nodeDir(root, p)
		if err != nil {
			return nil, err
		}
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
sentinel monitor %s 127.0.0.1 %d 2
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 5000
sentinel parallel-syncs %s 1
`, p, dir, MasterName, ports[0], MasterName, MasterName, MasterName)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return nil, err
		}
		n := &Node{Port: p, dir: dir, log: log, args: []string{conf, "--sentinel"}}
		g.Sentinels = append(g.Sentinels, n)
		if err := n.start(); err != nil {
			return nil, err
		}
	}
	// Every Sentinel must know both replicas and the other Sentinels
	// before a failover can happen.
	err = eventually(20*time.Second, func() error {
		for _, s := range g.Sentinels {
			info, err := sentinelMaster(s.Addr())
			if err != nil {
				return err
			}
			if info["num-slaves"] != "2" || info["num-other-sentinels"] != "2" {
				return fmt.Errorf("sentinel %s sees %s replicas and %s other sentinels", s.Addr(), info["num-slaves"], info["num-other-sentinels"])
			}
		}
		return nil
	})
	return g, err
}

// URL is the group's REDIS_URL.
func (g *SentinelGroup) URL() string {
	u := "redis-sentinel://" + g.Sentinels[0].Addr() + "?master_name=" + MasterName
	for _, s := range g.Sentinels[1:] {
		u += "&addr=" + s.Addr()
	}
	return u
}

// Primary is the node the Sentinels name as primary.
func (g *SentinelGroup) Primary() (*Node, error) {
	var last error
	for _, s := range g.Sentinels {
		if !s.Running() {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		addr, err := c.GetMasterAddrByName(context.Background(), MasterName).Result()
		_ = c.Close()
		if err != nil {
			last = err
			continue
		}
		for _, n := range g.Data {
			if n.Addr() == addr[0]+":"+addr[1] {
				return n, nil
			}
		}
		return nil, fmt.Errorf("sentinel names %v, not one of the group", addr)
	}
	return nil, fmt.Errorf("no sentinel answers: %w", last)
}

// KillPrimaryFor SIGKILLs the primary (which serves every key) and
// returns it.
func (g *SentinelGroup) KillPrimaryFor(string) (*Node, error) {
	p, err := g.Primary()
	if err != nil {
		return nil, err
	}
	p.Kill()
	return p, nil
}

// WaitFailover waits until the Sentinels name a running primary other
// than old, and it answers as one.
func (g *SentinelGroup) WaitFailover(_ string, old *Node, within time.Duration) (*Node, error) {
	var p *Node
	err := eventually(within, func() error {
		var err error
		if p, err = g.Primary(); err != nil {
			return err
		}
		if p == old || !p.Running() {
			return fmt.Errorf("the sentinels still name %s", p.Addr())
		}
		return isPrimary(p.Addr())
	})
	return p, err
}

// Rejoin starts a killed data node again as a replica of the current
// primary (never as an empty primary: replicas would copy its nothing).
func (g *SentinelGroup) Rejoin(n *Node) error {
	p, err := g.Primary()
	if err != nil {
		return err
	}
	return n.start("--replicaof", "127.0.0.1", strconv.Itoa(p.Port))
}

// KillReplica SIGKILLs one running replica and returns it.
func (g *SentinelGroup) KillReplica() (*Node, error) {
	p, err := g.Primary()
	if err != nil {
		return nil, err
	}
	for _, n := range g.Data {
		if n != p && n.Running() {
			n.Kill()
			return n, nil
		}
	}
	return nil, fmt.Errorf("no running replica")
}

// Stop kills every process and removes the group's directory.
func (g *SentinelGroup) Stop() {
	stopAll(g.Sentinels)
	stopAll(g.Data)
	_ = os.RemoveAll(g.root)
}

func sentinelMaster(addr string) (map[string]string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	return c.Master(context.Background(), MasterName).Result()
}

// waitReplicas waits until the primary at addr has n replicas online.
func waitReplicas(addr string, n int, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	return eventually(within, func() error {
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		online := strings.Count(info, "state=online")
		if online < n {
			return fmt.Errorf("%s has %d of %d replicas online", addr, online, n)
		}
		return nil
	})
}

func isPrimary(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	role, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil {
		return err
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%s is %v, not yet primary: %w", addr, role, errNotYet)
	}
	return nil
}
