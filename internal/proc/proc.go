// Package proc supervises the child processes of the chaos suite and the
// benchmark: seckill's own commands and servers, started, crashed with
// SIGKILL, restarted and stopped, all on loopback.
package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Proc is one supervised process: restarted whenever it exits, until
// stopped. kill sends SIGKILL, like a crash.
type Proc struct {
	name string
	argv []string
	env  []string
	log  io.Writer

	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool
	exited  chan struct{}
	starts  int
}

// New returns a process to run argv with env added to this process's
// environment, its output going to log. Nothing starts until Start.
func New(name string, log io.Writer, env []string, argv ...string) *Proc {
	return &Proc{name: name, argv: argv, env: env, log: log}
}

// Start starts the process; whenever it exits before Stop, it is started
// again after half a second.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	p.starts++
	exited := p.exited
	go func() {
		_ = cmd.Wait()
		close(exited)
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if !stopped { // crashed or killed: a supervisor restarts it
			time.Sleep(500 * time.Millisecond)
			_ = p.Start()
		}
	}()
	return nil
}

// Kill SIGKILLs the process (its group); the supervisor restarts it.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// Stop ends the process for good (SIGTERM, then SIGKILL after 10 s).
func (p *Proc) Stop() {
	p.mu.Lock()
	p.stopped = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// Name is the name the process was given.
func (p *Proc) Name() string { return p.name }

// Pid is the running process's id, 0 when none runs.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Memory reads a process's resident set size now and its peak (VmRSS and
// VmHWM of /proc/<pid>/status), in bytes.
func Memory(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(string(f[1]), 10, 64)
		switch string(f[0]) {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// FreePort returns a loopback TCP port that was free a moment ago, from
// 20000-32000 (clear of the kernel's ephemeral range).
func FreePort() int {
	for {
		p := 20000 + rand.IntN(12000)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			_ = l.Close()
			return p
		}
	}
}

// WaitHTTP polls url until it answers 200, for at most within.
func WaitHTTP(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s", url, within)
}
