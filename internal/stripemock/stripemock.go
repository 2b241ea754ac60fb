// Package stripemock runs Stripe's API mock (github.com/stripe/stripe-mock,
// which serves Stripe's OpenAPI specification and rejects any request it
// does not describe) on private loopback ports for a test.
package stripemock

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Binary finds stripe-mock: SECKILL_STRIPE_MOCK, the PATH, or
// $(go env GOPATH)/bin.
func Binary() (string, error) {
	if p := os.Getenv("SECKILL_STRIPE_MOCK"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "stripe-mock")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no stripe-mock found: run `make test` (it builds it), or `go install github.com/stripe/stripe-mock@v0.203.0`, or set SECKILL_STRIPE_MOCK")
	}
	return p, nil
}

// Start runs stripe-mock until t ends and returns its base URL
// (http://127.0.0.1:PORT), for STRIPE_API_BASE.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	httpPort, httpsPort := freePort(t), freePort(t)
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:"+strconv.Itoa(httpPort), "-https-addr", "127.0.0.1:"+strconv.Itoa(httpsPort))
	if os.Getenv("SECKILL_STRIPE_MOCK_LOGS") != "" {
		cmd.Args = append(cmd.Args, "-verbose")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/balance")
		if err == nil {
			_ = resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock did not answer at %s within 20s: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
