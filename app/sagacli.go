package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/saga"
)

// sagasVersionsHelp is the help of `seckill sagas versions`, and of
// `seckill sagas`, its one subcommand.
func sagasVersionsHelp() cli.Help {
	return cli.Help{
		Usage: "seckill sagas versions [--json]",
		About: `Counts the open OrderSaga runs by the saga versions they started on
(Temporal's TemporalChangeVersion search attribute). A run without
` + seckill.SagaBaseChange + `-1 started on the retired saga of earlier releases, which this
release's worker cannot replay: the command exits non-zero while any is
open (docs/OPERATIONS.md, Upgrading). It only reads Temporal.`,
		Env: Env(TemporalEnv()...),
	}
}

// ErrRetiredSagas makes `seckill sagas versions` exit non-zero.
var ErrRetiredSagas = errors.New("open runs of a retired saga version: let the release that started them finish them before upgrading the worker (docs/OPERATIONS.md, Upgrading)")

// SagasCommand runs `seckill sagas ...` against cfg's Temporal.
func SagasCommand(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	h := sagasVersionsHelp()
	switch {
	case len(args) == 0:
		return cli.Wrong(errors.New("sagas: a subcommand is required (versions)"), h.Short(nil))
	case cli.IsHelp(args[0]):
		args = []string{"versions", "--help"}
	case args[0] != "versions":
		return cli.Wrong(fmt.Errorf("sagas: unknown subcommand %q", args[0]), h.Short(nil))
	}
	fs := flag.NewFlagSet("sagas versions", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := h.Parse(fs, args[1:]); err != nil {
		return err
	}
	tc, err := dialTemporal(ctx, cfg)
	if err != nil {
		return err
	}
	defer tc.Close()
	counts, err := saga.New(tc, saga.Options{TaskQueue: cfg.TaskQueue}).OpenVersions(ctx)
	if err != nil {
		return err
	}
	retired := 0
	for _, c := range counts {
		if c.Retired {
			retired += c.Runs
		}
	}
	if *asJSON {
		if counts == nil {
			counts = []saga.VersionCount{}
		}
		if err := json.NewEncoder(stdout).Encode(map[string]any{"open_runs": counts, "retired_runs": retired}); err != nil {
			return err
		}
	} else {
		printVersions(stdout, counts, retired)
	}
	if retired > 0 {
		return ErrRetiredSagas
	}
	return nil
}

func printVersions(w io.Writer, counts []saga.VersionCount, retired int) {
	if len(counts) == 0 {
		fmt.Fprintln(w, "no open OrderSaga runs")
		return
	}
	fmt.Fprintf(w, "%6s  %s\n", "RUNS", "SAGA VERSIONS (TemporalChangeVersion)")
	for _, c := range counts {
		versions := strings.Join(c.Versions, ", ")
		if c.Retired {
			versions = strings.TrimPrefix(versions+", ", ", ") + "retired: started before " + seckill.SagaBaseChange + "-1"
		}
		fmt.Fprintf(w, "%6d  %s\n", c.Runs, versions)
	}
	if retired == 0 {
		fmt.Fprintln(w, "no open run of a retired saga version")
	} else {
		fmt.Fprintf(w, "%d open runs of a retired saga version\n", retired)
	}
}

// dialTemporal is a command-line tool's Temporal client for cfg; an error
// names the fix.
func dialTemporal(ctx context.Context, cfg Config) (sdkclient.Client, error) {
	return DialTemporal(ctx, cfg, sdkclient.Options{})
}
