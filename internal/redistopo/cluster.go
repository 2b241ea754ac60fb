package redistopo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three primaries with two replicas each; a
// primary gone for a second is failed over by its replicas.
type Cluster struct {
	Nodes []*Node
	root  string
}

// StartCluster starts a Cluster, its output going to log. The free ports
// it picks may be taken by another process before its nodes bind them, so
// a start that fails is tried again, on other ports, up to three times.
func StartCluster(log io.Writer) (*Cluster, error) {
	var errs []error
	for range 3 {
		c, err := startCluster(log)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// startCluster starts a Cluster once; on failure it stops what it started.
func startCluster(log io.Writer) (_ *Cluster, err error) {
	root, err := tempDir("cluster")
	if err != nil {
		return nil, err
	}
	c := &Cluster{root: root}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	var addrs []string
	for _, p := range freePorts(9) {
		dir, err := nodeDir(root, p)
		if err != nil {
			return nil, err
		}
		args := append(baseArgs(p, dir), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000")
		n := &Node{Port: p, dir: dir, log: log, args: args}
		c.Nodes = append(c.Nodes, n)
		if err := n.start(); err != nil {
			return nil, err
		}
		addrs = append(addrs, n.Addr())
	}
	create := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "2", "--cluster-yes")...)
	var out bytes.Buffer
	create.Stdout, create.Stderr = &out, &out
	if err := create.Run(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out.String())
	}
	err = eventually(30*time.Second, func() error {
		for _, n := range c.Nodes {
			if err := clusterOK(n.Addr()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	// Each primary's two replicas must have synced before a failover can
	// promote one.
	for _, n := range c.Nodes {
		if isPrimary(n.Addr()) == nil {
			if err := waitReplicas(n.Addr(), 2, 30*time.Second); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// URL is the Cluster's REDIS_URL.
func (c *Cluster) URL() string {
	u := "redis-cluster://" + c.Nodes[0].Addr()
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr()
	}
	return u
}

// PrimaryFor is the node serving key's slot as primary, as a running node
// says.
func (c *Cluster) PrimaryFor(key string) (*Node, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		ctx := context.Background()
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			_ = cl.Close()
			continue
		}
		slots, err := cl.ClusterSlots(ctx).Result()
		_ = cl.Close()
		if err != nil {
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				for _, m := range c.Nodes {
					if m.Addr() == s.Nodes[0].Addr {
						return m, nil
					}
				}
			}
		}
		return nil, fmt.Errorf("no node serves slot %d", slot)
	}
	return nil, fmt.Errorf("no cluster node answers")
}

// KillPrimaryFor SIGKILLs the primary serving key and returns it.
func (c *Cluster) KillPrimaryFor(key string) (*Node, error) {
	p, err := c.PrimaryFor(key)
	if err != nil {
		return nil, err
	}
	p.Kill()
	return p, nil
}

// WaitFailover waits until a running node other than old serves key as
// primary and every running node says the cluster is ok.
func (c *Cluster) WaitFailover(key string, old *Node, within time.Duration) (*Node, error) {
	var p *Node
	err := eventually(within, func() error {
		var err error
		if p, err = c.PrimaryFor(key); err != nil {
			return err
		}
		if p == old || !p.Running() {
			return fmt.Errorf("%s still serves %s: %w", p.Addr(), key, errNotYet)
		}
		for _, n := range c.Nodes {
			if n.Running() {
				if err := clusterOK(n.Addr()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return p, err
}

// Rejoin starts a killed node again; its nodes.conf makes it a replica of
// the primary that replaced it.
func (c *Cluster) Rejoin(n *Node) error { return n.start() }

// Stop kills every node and removes the Cluster's directory.
func (c *Cluster) Stop() {
	stopAll(c.Nodes)
	_ = os.RemoveAll(c.root)
}

func clusterOK(addr string) error {
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = cl.Close() }()
	info, err := cl.ClusterInfo(context.Background()).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("cluster node %s: not ok yet: %w", addr, errNotYet)
	}
	return nil
}
