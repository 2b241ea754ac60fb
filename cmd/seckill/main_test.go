//go:build !slim

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
)

// noEnv is an empty environment: every setting at its default.
func noEnv(string) string { return "" }

// runArgs runs the command line args and returns its exit status, stdout
// and stderr.
func runArgs(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, noEnv, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// names returns the names of vars, less those in except.
func names(vars []string, except ...string) []string {
	return slices.DeleteFunc(slices.Clone(vars), func(n string) bool { return slices.Contains(except, n) })
}

// configEnv is the name of every variable app.FromEnv reads.
func configEnv() []string {
	var all []string
	for _, v := range app.ConfigEnv() {
		all = append(all, v.Name)
	}
	return all
}

// environment returns the names the Environment paragraph of help lists.
func environment(help string) []string {
	_, env, found := strings.Cut(help, "\nEnvironment")
	if !found {
		return nil
	}
	var listed []string
	for _, line := range strings.Split(env, "\n")[1:] {
		if fields := strings.Fields(line); len(fields) > 0 && strings.HasPrefix(line, "  ") {
			listed = append(listed, fields[0])
		}
	}
	return listed
}

// helpCases is every command and subcommand, and some of the settings its
// help must list: what it reads, as its code does.
func helpCases() []struct {
	args []string
	env  []string
} {
	devServer := []string{"SECKILL_DEV_TEMPORAL_PORT", "SECKILL_DEV_UI_PORT", "SECKILL_DEV_PPROF_PORT"}
	beyondLoopback := []string{"TEMPORAL_ADDRESS", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_API_KEY"}
	admin := []string{"SECKILL_API_URL", "SECKILL_HTTP_ADDR", "SECKILL_ADMIN_TOKEN", "SECKILL_JWT_SECRET", "SECKILL_JWT_AUDIENCE", "SECKILL_ADMIN_CLAIM"}
	temporal := []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE", "TEMPORAL_TLS_CERT", "TEMPORAL_API_KEY"}
	return []struct {
		args []string
		env  []string
	}{
		// The processes read every setting of the loader, but the embedded
		// Temporal server's (api, worker) or a remote Temporal's (dev).
		{[]string{"api", "--help"}, append(names(configEnv(), devServer...), "SECKILL_LOG_LEVEL", "SECKILL_PPROF_ADDR")},
		{[]string{"worker", "--help"}, append(names(configEnv(), devServer...), "SECKILL_LOG_LEVEL", "SECKILL_PPROF_ADDR", "SECKILL_METRICS_ADDR")},
		{[]string{"dev", "--help"}, append(names(configEnv(), append(beyondLoopback, "SECKILL_DEV_TOOLS")...), "SECKILL_LOG_LEVEL", "SECKILL_LOG_FORMAT", "SECKILL_PPROF_ADDR")},
		{[]string{"devserver", "-h"}, append([]string{"DATABASE_URL", "TEMPORAL_NAMESPACE", "SECKILL_LOG_LEVEL"}, devServer...)},
		{[]string{"migrate", "--help"}, []string{"DATABASE_URL"}},
		{[]string{"token", "--help"}, []string{"SECKILL_JWT_SECRET", "SECKILL_JWT_AUDIENCE", "SECKILL_ADMIN_CLAIM", "SECKILL_OIDC_ISSUER", "SECKILL_JWKS_URL"}},
		{[]string{"pay", "--help"}, append([]string{"SECKILL_HTTP_ADDR", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN", "SECKILL_JWT_SECRET"}, temporal...)},
		{[]string{"audit", "-help"}, append([]string{"DATABASE_URL", "REDIS_URL", "SECKILL_REDIS_PREFIX", "SECKILL_PAYMENT_HOLD"}, temporal...)},
		{[]string{"bench", "--help"}, append([]string{"DATABASE_URL", "REDIS_URL", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET"}, temporal...)},
		{[]string{"sale", "--help"}, admin},
		{[]string{"sale", "create", "--help"}, admin},
		{[]string{"sale", "list", "-h"}, admin},
		{[]string{"sale", "show", "--help"}, admin},
		{[]string{"sale", "stats", "--help"}, admin},
		{[]string{"order", "--help"}, append(admin, temporal...)},
		{[]string{"order", "wait", "--help"}, append(admin, temporal...)},
		{[]string{"draw", "help"}, admin},
		{[]string{"draw", "verify", "--help"}, admin},
		{[]string{"sagas", "--help"}, temporal},
		{[]string{"sagas", "versions", "--help"}, temporal},
		{[]string{"events", "--help"}, append([]string{"DATABASE_URL", "SECKILL_EVENTS_RETRY_FOR"}, temporal...)},
		{[]string{"events", "failed", "--help"}, []string{"DATABASE_URL"}},
		{[]string{"events", "redeliver", "--help"}, append([]string{"DATABASE_URL", "SECKILL_EVENTS_RETRY_FOR"}, temporal...)},
	}
}

func TestHelp_EveryCommandExits0WithItsUsageAndSettings(t *testing.T) {
	for _, c := range helpCases() {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := runArgs(c.args...)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			require.Empty(t, stderr)
			path := strings.Join(slices.DeleteFunc(slices.Clone(c.args), func(a string) bool { return a == "help" || strings.HasPrefix(a, "-") }), " ")
			require.True(t, strings.HasPrefix(stdout, "Usage:\n  seckill "+path), "the help starts with the usage of seckill %s:\n%s", path, stdout)
			listed := environment(stdout)
			for _, name := range c.env {
				require.Contains(t, listed, name, "seckill %s reads %s:\n%s", path, name, stdout)
			}
		})
	}
}

func TestHelp_TopLevelPointsToTheSettings(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, stdout, stderr := runArgs(args...)
		require.Equal(t, 0, code, "%q", args)
		require.Empty(t, stderr)
		require.Contains(t, stdout, "docs/OPERATIONS.md#configuration", "where the settings are documented")
		require.Contains(t, stdout, "seckill COMMAND --help")
	}
}

// A flag the command does not have exits 2 with the usage on stderr, as
// Go's flag package does; so do an unknown or a missing (sub)command.
func TestRun_AWrongCommandLineExits2WithTheUsage(t *testing.T) {
	for _, c := range helpCases() {
		args := append(slices.DeleteFunc(slices.Clone(c.args), func(a string) bool { return a == "help" || strings.HasPrefix(a, "-") }), "--bogus")
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runArgs(args...)
			require.Equal(t, 2, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			// A command with subcommands takes none called --bogus.
			require.Regexp(t, `^seckill: `+strings.Join(args[:len(args)-1], " ")+`: (flag provided but not defined: -bogus|unknown subcommand "--bogus")\n\nUsage:\n  seckill `+args[0], stderr)
		})
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "seckill: a command is required\n"},
		{[]string{"frobnicate"}, `seckill: unknown command "frobnicate"`},
		{[]string{"--bogus"}, `seckill: unknown command "--bogus"`},
		{[]string{"sale"}, "sale: a subcommand is required"},
		{[]string{"sale", "frobnicate"}, `sale: unknown subcommand "frobnicate"`},
		{[]string{"order", "frobnicate"}, `order: unknown subcommand "frobnicate"`},
		{[]string{"events"}, "events: a subcommand is required"},
		{[]string{"sagas", "frobnicate"}, `sagas: unknown subcommand "frobnicate"`},
		{[]string{"draw"}, "draw: a subcommand is required"},
	} {
		code, stdout, stderr := runArgs(c.args...)
		require.Equal(t, 2, code, "%q: %s", c.args, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, c.want, "%q", c.args)
		require.Contains(t, stderr, "Usage:\n", "%q", c.args)
	}
}

// Every variable seckill reads is listed by some command's help: those
// FromEnv reads (app.ConfigEnv, which FromEnv names itself), and those
// the code reads elsewhere, found in the source.
func TestHelp_EverySettingReadIsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range helpCases() {
		_, stdout, _ := runArgs(c.args...)
		for _, name := range environment(stdout) {
			listed[name] = true
		}
	}
	var settings []string
	for _, v := range app.Settings() {
		settings = append(settings, v.Name)
	}
	for _, name := range settings {
		require.True(t, listed[name], "%s is a setting no command's help lists", name)
	}
	require.Subset(t, settings, []string{"SECKILL_HTTP_ADDR", "TEMPORAL_TLS_CERT", "OTEL_EXPORTER_OTLP_ENDPOINT", "SECKILL_TRUSTED_PROXIES"},
		"ConfigEnv finds what FromEnv reads")

	read := regexp.MustCompile(`etenv\("([A-Z][A-Z0-9_]+)"\)`)
	var files []string
	for _, dir := range []string{".", "../../app", "../../tracing"} {
		matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	found := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range read.FindAllStringSubmatch(string(src), -1) {
			found++
			require.Contains(t, settings, m[1], "%s reads %s, which app.Settings does not list", file, m[1])
		}
	}
	require.Greater(t, found, 5, "the source reads variables with getenv(\"NAME\")")
}

// A value a usage line shows for a flag with a default is that default,
// as the flag has it: `order --help` once said --timeout 2m while the
// flag waited 3m. The top-level usage is checked against each command's.
func TestHelp_UsageShowsTheFlagsDefaults(t *testing.T) {
	defaultRe := regexp.MustCompile(`(?m)^  --([a-z-]+)(?: \S+)?\n        .*\(default ([^()]*)\)$`)
	shownRe := regexp.MustCompile(`--([a-z][a-z-]*) ([0-9][^\s\]|]*)`)
	usageOf := func(help string) string {
		usage, _, _ := strings.Cut(help, "\n\n")
		return usage
	}
	check := func(t *testing.T, usage, help, what string) {
		t.Helper()
		defaults := map[string]string{}
		for _, m := range defaultRe.FindAllStringSubmatch(help, -1) {
			defaults[m[1]] = m[2]
		}
		for _, m := range shownRe.FindAllStringSubmatch(usage, -1) {
			def, ok := defaults[m[1]]
			if !ok {
				continue
			}
			shown, want := m[2], def
			if _, err := strconv.Atoi(shown); err == nil {
				require.Equal(t, want, shown, "%s shows --%s %s, its default is %s", what, m[1], shown, want)
				continue
			}
			if d, err := time.ParseDuration(shown); err == nil {
				w, err := time.ParseDuration(want)
				require.NoError(t, err, "--%s's default %q", m[1], want)
				require.Equal(t, w, d, "%s shows --%s %s, its default is %s", what, m[1], shown, want)
			}
		}
	}
	helps := map[string]string{}
	checked := 0
	for _, c := range helpCases() {
		_, stdout, _ := runArgs(c.args...)
		path := strings.Join(slices.DeleteFunc(slices.Clone(c.args), func(a string) bool { return a == "help" || strings.HasPrefix(a, "-") }), " ")
		helps[path] = stdout
		check(t, usageOf(stdout), stdout, "seckill "+path+" --help")
		checked++
	}
	require.Contains(t, helps["order"], "[--timeout 3m]")
	require.Contains(t, helps["order"], "how long to wait (default 3m)")

	_, top, _ := runArgs("--help")
	for _, line := range strings.Split(top, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "seckill ") {
			continue
		}
		// The command's path: the words up to the first flag or argument.
		var path []string
		for _, w := range strings.Fields(line)[1:] {
			if strings.ContainsAny(w, "-[|.") || strings.ToUpper(w) == w {
				break
			}
			path = append(path, w)
		}
		help, ok := helps[strings.Join(path, " ")]
		if !ok {
			continue
		}
		check(t, line, help, "seckill --help's "+strings.Join(path, " "))
		checked++
	}
	require.Greater(t, checked, len(helpCases())+5, "the top-level usage's lines were checked")
}
