package cli_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/cli"
)

func exampleHelp() (cli.Help, *flag.FlagSet) {
	fs := flag.NewFlagSet("thing do", flag.ContinueOnError)
	fs.Duration("timeout", 3*time.Minute, "how long to wait")
	fs.String("api", "http://127.0.0.1:8080", "API base URL")
	fs.Bool("json", false, "print JSON")
	fs.Int("limit", 0, "at most this many")
	return cli.Help{
		Usage: "seckill thing do [--timeout 3m]",
		About: "Does the thing.",
		Env:   []cli.Var{{Name: "DATABASE_URL", Default: "postgres://x"}, {Name: "SECKILL_JWT_SECRET"}},
	}, fs
}

func TestHelp_HelpFlagPrintsUsageFlagsAndEnvironmentAndExits0(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		h, fs := exampleHelp()
		err := h.Parse(fs, []string{arg})
		require.ErrorIs(t, err, flag.ErrHelp)
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, cli.Exit(fmt.Errorf("wrapped: %w", err), &stdout, &stderr))
		require.Empty(t, stderr.String())
		require.Equal(t, `Usage:
  seckill thing do [--timeout 3m]

Does the thing.

Flags:
  --api string
        API base URL (default "http://127.0.0.1:8080")
  --json
        print JSON
  --limit int
        at most this many
  --timeout duration
        how long to wait (default 3m)

Environment (docs/OPERATIONS.md#configuration says what each setting means):
  DATABASE_URL        default postgres://x
  SECKILL_JWT_SECRET
`, stdout.String())
	}
}

func TestHelp_ABadFlagExits2WithTheUsageOnStderr(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"--timeout", "soon"}} {
		h, fs := exampleHelp()
		err := h.Parse(fs, args)
		require.Error(t, err)
		require.NotErrorIs(t, err, flag.ErrHelp)
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, cli.Exit(err, &stdout, &stderr), "%q", args)
		require.Empty(t, stdout.String())
		require.Regexp(t, `^seckill: thing do: .*\n\nUsage:\n  seckill thing do \[--timeout 3m\]\n\nFlags:\n`, stderr.String())
		require.NotContains(t, stderr.String(), "Environment", "a wrong command line is shown the usage, not the whole help")
	}
}

func TestExit_StatusOfEachEnding(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, cli.Exit(nil, &stdout, &stderr))
	require.Equal(t, 1, cli.Exit(errors.New("audit: invariants violated"), &stdout, &stderr))
	require.Equal(t, "seckill: audit: invariants violated\n", stderr.String())
	require.Empty(t, stdout.String())

	stderr.Reset()
	require.Equal(t, 2, cli.Exit(cli.Wrong(errors.New(`unknown command "x"`), "Usage:\n  seckill ...\n"), &stdout, &stderr))
	require.Equal(t, "seckill: unknown command \"x\"\n\nUsage:\n  seckill ...\n", stderr.String())

	require.Equal(t, 0, cli.Exit(cli.ShowHelp("the help\n"), &stdout, &stderr))
	require.Equal(t, "the help\n", stdout.String())
}

func TestDuration_AsAPersonTypesIt(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3 * time.Minute: "3m", time.Hour: "1h", 73 * time.Hour: "73h", 90 * time.Second: "1m30s",
		500 * time.Millisecond: "500ms", 0: "0s", time.Hour + time.Second: "1h0m1s",
	} {
		require.Equal(t, want, cli.Duration(d), "%v", d)
	}
}
