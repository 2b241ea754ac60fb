package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one supervised process: restarted whenever it exits, until
// stopped. kill sends SIGKILL, like a crash.
type proc struct {
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

func newProc(name string, log io.Writer, env []string, argv ...string) *proc {
	return &proc{name: name, argv: argv, env: env, log: log}
}

func (p *proc) start() error {
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
			_ = p.start()
		}
	}()
	return nil
}

// kill SIGKILLs the process (its group); the supervisor restarts it.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// stop ends the process for good (SIGTERM, then SIGKILL after 10 s).
func (p *proc) stop() {
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
