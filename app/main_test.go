//go:build !slim

package app_test

import (
	"bufio"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/internal/testenv"
)

// One embedded Temporal server serves every test of this package, each test
// in a namespace of its own. Starting and stopping a server per test is
// slower, and the server's membership layer calls log.Fatal (exiting the
// test binary) when it is stopped while a service is still joining.
var (
	shared      *devserver.Server
	namespaceNo atomic.Int32
)

const (
	testNamespaces = 72
	// helperEnv makes the test binary a dev server child process (see
	// TestDevServer_DBFileSurvivesSIGKILL).
	helperEnv = "SECKILL_TEST_DEVSERVER_DBFILE"
)

func TestMain(m *testing.M) {
	if dbFile := os.Getenv(helperEnv); dbFile != "" {
		runDevServerChild(dbFile)
		return
	}
	if os.Getenv(devChildEnv) != "" {
		runDevChild()
		return
	}
	cfg, err := app.FromEnv(func(string) string { return "" })
	if err != nil {
		panic(err)
	}
	if cfg.DevTemporalPort, err = devserver.FreePort("127.0.0.1"); err != nil {
		panic(err)
	}
	if cfg.DevUIPort, err = devserver.FreePort("127.0.0.1"); err != nil {
		panic(err)
	}
	names := make([]string, testNamespaces)
	for i := range names {
		names[i] = namespaceName(i + 1)
	}
	level := "fatal"
	if os.Getenv("SECKILL_TEST_LOG") != "" {
		level = "info"
	}
	// The end-to-end tests run on Temporal's PostgreSQL store, as
	// `seckill dev` does by default.
	if cfg.DatabaseURL, err = testenv.TemporalDatabaseURL(); err != nil {
		panic(err)
	}
	shared, err = app.StartDevServer(cfg, app.DevOptions{ExtraNamespaces: names, TemporalLogLevel: level})
	if err != nil {
		panic(err)
	}
	// No Stop: the process ends here, and with it the server.
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

func namespaceName(i int) string { return fmt.Sprintf("test-%02d", i) }

// namespace hands each test a namespace of its own on the shared server.
func namespace(t *testing.T) string {
	t.Helper()
	n := int(namespaceNo.Add(1))
	if n > testNamespaces {
		t.Fatalf("more than %d tests need a namespace; raise testNamespaces", testNamespaces)
	}
	return namespaceName(n)
}

// runDevServerChild runs `seckill devserver --db-file` in this process
// until it is killed, printing READY once it serves.
func runDevServerChild(dbFile string) {
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		panic(err)
	}
	ts, err := app.StartDevServer(cfg, app.DevOptions{DBFile: dbFile, NoUI: true, TemporalLogLevel: "fatal"})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "READY", ts.Address())
	_ = w.Flush()
	select {}
}
