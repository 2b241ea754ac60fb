package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/store"
)

// The help of `seckill events` and of its subcommands.
const (
	eventsFailedUsage    = "seckill events failed [--limit 100] [--json]"
	eventsRedeliverUsage = "seckill events redeliver --id ID"
	eventsAbout          = `Order events to the shop (SECKILL_EVENTS_URL) are retried for
SECKILL_EVENTS_RETRY_FOR; one that still fails is kept, with every later
event of its order behind it, so the shop gets an order's events in order.`
	eventsFailedAbout = `failed lists the kept events, oldest first: id (the webhook-id), order,
type, when it was kept and the last error. It reads PostgreSQL.`
	eventsRedeliverAbout = `redeliver sends the kept events of ID's order again, in order from the
order's first kept event (whichever of them ID names), through the
order's ShopEvents workflow (shop-events-<order id> in the Temporal UI);
each is forgotten once the shop took it, and stays kept, in its place, if
it fails again. Events of the order that come meanwhile are kept behind
them: redeliver again for those. It reads PostgreSQL and Temporal.`
)

// eventsHelp is the help of `seckill events sub`, or of `seckill events`
// when sub is neither failed nor redeliver.
func eventsHelp(sub string) cli.Help {
	redeliverEnv := Env(append([]string{"DATABASE_URL", "SECKILL_EVENTS_RETRY_FOR"}, TemporalEnv()...)...)
	switch sub {
	case "failed":
		return cli.Help{Usage: eventsFailedUsage, About: eventsAbout + "\n\n" + eventsFailedAbout, Env: Env("DATABASE_URL")}
	case "redeliver":
		return cli.Help{Usage: eventsRedeliverUsage, About: eventsAbout + "\n\n" + eventsRedeliverAbout, Env: redeliverEnv}
	}
	return cli.Help{Usage: eventsFailedUsage + "\n" + eventsRedeliverUsage,
		About: eventsAbout + "\n\n" + eventsFailedAbout + "\n\n" + eventsRedeliverAbout, Env: redeliverEnv}
}

// EventsCommand runs `seckill events ...`.
func EventsCommand(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0:
		return cli.Wrong(errors.New("events: a subcommand is required (failed, redeliver)"), eventsHelp("").Short(nil))
	case cli.IsHelp(args[0]):
		return cli.ShowHelp(eventsHelp("").Text(nil))
	case args[0] != "failed" && args[0] != "redeliver":
		return cli.Wrong(fmt.Errorf("events: unknown subcommand %q", args[0]), eventsHelp("").Short(nil))
	}
	fs := flag.NewFlagSet("events "+args[0], flag.ContinueOnError)
	var (
		limit  *int
		asJSON *bool
		id     *string
	)
	if args[0] == "failed" {
		limit = fs.Int("limit", 100, "list at most this many")
		asJSON = fs.Bool("json", false, "print JSON")
	} else {
		id = fs.String("id", "", "the kept event to send again (its webhook-id)")
	}
	if err := eventsHelp(args[0]).Parse(fs, args[1:]); err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return postgresError(cfg.DatabaseURL, err)
	}
	defer func() { _ = st.Close() }()
	if args[0] == "failed" {
		if *limit < 1 {
			return errors.New("events failed: --limit must be at least 1")
		}
		kept, err := st.KeptShopEvents(ctx, *limit)
		if err != nil {
			return err
		}
		return printKept(stdout, kept, *asJSON)
	}
	if *id == "" {
		return errors.New("events redeliver: --id is required (seckill events failed lists the ids)")
	}
	kept, err := st.KeptShopEventsOfOrder(ctx, *id)
	if errors.Is(err, seckill.ErrNotFound) {
		return fmt.Errorf("events redeliver: no kept event %q (seckill events failed lists them)", *id)
	}
	if err != nil {
		return err
	}
	tc, err := dialTemporal(ctx, cfg)
	if err != nil {
		return err
	}
	defer tc.Close()
	shop := saga.NewShopClient(saga.New(tc, saga.Options{TaskQueue: cfg.TaskQueue}), cfg.EventsRetryFor)
	for _, k := range kept {
		ev := k.Event
		ev.Redelivery = true
		if err := shop.TellShop(ctx, ev); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s (order %d, %s): handed to %s\n", ev.ID, ev.OrderID, ev.Type, seckill.ShopEventsWorkflowID(ev.OrderID))
	}
	return nil
}

func printKept(w io.Writer, kept []seckill.KeptShopEvent, asJSON bool) error {
	if asJSON {
		type row struct {
			ID      string                `json:"id"`
			OrderID string                `json:"order_id"`
			Type    seckill.ShopEventType `json:"type"`
			KeptAt  time.Time             `json:"kept_at"`
			Error   string                `json:"error"`
		}
		rows := make([]row, 0, len(kept))
		for _, k := range kept {
			rows = append(rows, row{k.Event.ID, k.Event.Order.OrderID, k.Event.Type, k.KeptAt, k.Error})
		}
		return json.NewEncoder(w).Encode(rows)
	}
	if len(kept) == 0 {
		_, err := fmt.Fprintln(w, "no kept order events: every event was delivered or is still being retried")
		return err
	}
	for _, k := range kept {
		fmt.Fprintf(w, "%s  order %s  %s  kept %s\n    %s\n", k.Event.ID, k.Event.Order.OrderID, k.Event.Type, k.KeptAt.Format(time.RFC3339), k.Error)
	}
	return nil
}
