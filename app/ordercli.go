package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/saga"
)

// orderWaitHelp is the help of `seckill order wait`, and of `seckill
// order`, its one subcommand.
func orderWaitHelp() cli.Help {
	return cli.Help{
		Usage: "seckill order wait --order ID [--status STATUS] [--timeout " + cli.Duration(DefaultOrderWait) + "] [--api URL]",
		About: `Waits until the order has STATUS (QUEUED, AWAITING_PAYMENT, PAID or
CLOSED), by default until it is decided (PAID or CLOSED, whichever comes),
and prints "order ID STATUS" (and a closed order's reason). A decided
order is also waited for until its saga has ended, so that what its ending
does is done: the unit back in stock or handed to the first waiting buyer,
a refund started. Exits non-zero when the order can no longer reach STATUS
(it went past it) or the timeout passes.

It reads the order through the API as an admin (SECKILL_ADMIN_TOKEN, or a
token signed with SECKILL_JWT_SECRET, the dev secret when unset) and its
saga in Temporal: with ` + "`seckill dev`" + `'s defaults it needs no setting.`,
		Env: Env(append(append([]string{"SECKILL_API_URL", "SECKILL_HTTP_ADDR"}, AdminEnv()...), TemporalEnv()...)...),
	}
}

// DefaultOrderWait is how long `seckill order wait` and `seckill pay
// --wait` wait by default: longer than the demo sale's two minutes to pay.
const DefaultOrderWait = 3 * time.Minute

// OrderCommand runs `seckill order ...`; getenv reads SECKILL_API_URL.
func OrderCommand(ctx context.Context, cfg Config, getenv func(string) string, args []string, stdout io.Writer) error {
	h := orderWaitHelp()
	switch {
	case len(args) == 0:
		return cli.Wrong(errors.New("order: a subcommand is required (wait)"), h.Short(nil))
	case cli.IsHelp(args[0]):
		args = []string{"wait", "--help"}
	case args[0] != "wait":
		return cli.Wrong(fmt.Errorf("order: unknown subcommand %q", args[0]), h.Short(nil))
	}
	fs := flag.NewFlagSet("order wait", flag.ContinueOnError)
	orderID := fs.String("order", "", "order id")
	status := fs.String("status", "", "the status to wait for: QUEUED, AWAITING_PAYMENT, PAID or CLOSED (default: PAID or CLOSED)")
	timeout := fs.Duration("timeout", DefaultOrderWait, "how long to wait")
	defaultAPI := getenv("SECKILL_API_URL")
	if defaultAPI == "" {
		defaultAPI = "http://" + cfg.HTTPAddr
	}
	apiURL := fs.String("api", defaultAPI, "API base URL")
	if err := h.Parse(fs, args[1:]); err != nil {
		return err
	}
	id, err := strconv.ParseInt(*orderID, 10, 64)
	if err != nil || id <= 0 {
		return errors.New("order wait: --order must be an order id")
	}
	want := seckill.OrderStatus(*status)
	if _, ok := statusRank[want]; !ok && want != "" {
		return fmt.Errorf("order wait: --status must be QUEUED, AWAITING_PAYMENT, PAID or CLOSED, got %q", *status)
	}
	line, err := WaitOrder(ctx, cfg, *apiURL, id, want, *timeout)
	if line != "" {
		fmt.Fprintln(stdout, line)
	}
	return err
}

// statusRank orders the statuses an order goes through.
var statusRank = map[seckill.OrderStatus]int{
	seckill.StatusQueued: 0, seckill.StatusAwaitingPayment: 1, seckill.StatusPaid: 2, seckill.StatusClosed: 2,
}

// orderState is what WaitOrder reads of an order.
type orderState struct {
	Status      seckill.OrderStatus `json:"status"`
	CloseReason *string             `json:"close_reason"`
}

func (o orderState) line(id int64) string {
	s := fmt.Sprintf("order %d %s", id, o.Status)
	if o.CloseReason != nil {
		s += " " + *o.CloseReason
	}
	return s
}

// WaitOrder polls order id through the API at apiURL (as an admin) until
// its status is want, or, with want "", until it is decided (PAID or
// CLOSED); a decided order also until its saga has ended. It returns the
// line `seckill order wait` prints ("order ID STATUS [REASON]"), also with
// an error when the order went past want or timeout passed.
func WaitOrder(ctx context.Context, cfg Config, apiURL string, id int64, want seckill.OrderStatus, timeout time.Duration) (string, error) {
	cfg.WithDevSecrets()
	apiURL = strings.TrimRight(apiURL, "/")
	token, err := cfg.AdminBearer("seckill-order-wait", timeout+time.Minute)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	var (
		tc    sdkclient.Client
		sagas *saga.Client
	)
	defer func() {
		if tc != nil {
			tc.Close()
		}
	}()
	var last orderState
	for {
		o, err := readOrder(ctx, client, apiURL, token, id)
		if err != nil {
			if ctx.Err() != nil && last.Status != "" {
				return last.line(id), waitTimeout(id, last, want, timeout)
			}
			return "", err
		}
		last = o
		decided := statusRank[o.Status] == 2
		switch {
		case o.Status == want || want == "" && decided:
			if !decided {
				return o.line(id), nil
			}
			// Decided: wait for the saga to finish what the decision does.
			if sagas == nil {
				if tc, err = DialTemporal(ctx, cfg, sdkclient.Options{}); err != nil {
					return o.line(id), err
				}
				sagas = saga.New(tc, saga.Options{TaskQueue: cfg.TaskQueue})
			}
			run, err := sagas.Describe(ctx, id)
			if err != nil && ctx.Err() == nil {
				return o.line(id), err
			}
			if err == nil && !run.Running {
				return o.line(id), nil
			}
		case want != "" && (statusRank[o.Status] > statusRank[want] || decided):
			return o.line(id), fmt.Errorf("order wait: order %d is %s: it will not be %s", id, o.Status, want)
		}
		select {
		case <-ctx.Done():
			return last.line(id), waitTimeout(id, last, want, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func waitTimeout(id int64, last orderState, want seckill.OrderStatus, timeout time.Duration) error {
	if want == "" {
		want = "decided (PAID or CLOSED, its saga ended)"
	}
	return fmt.Errorf("order wait: order %d is still %s after %s, not %s (--timeout waits longer)", id, last.Status, timeout, want)
}

// readOrder GETs order id as the admin token's bearer.
func readOrder(ctx context.Context, client *http.Client, apiURL, token string, id int64) (orderState, error) {
	var o orderState
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/api/v1/orders/"+strconv.FormatInt(id, 10), nil)
	if err != nil {
		return o, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return o, fmt.Errorf("order wait: the API at %s: %w (--api, or SECKILL_HTTP_ADDR, for an API elsewhere)", apiURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return o, fmt.Errorf("order wait: the API at %s has no order %d: use the order_id of a claim's 202", apiURL, id)
	case resp.StatusCode != http.StatusOK:
		return o, fmt.Errorf("order wait: order %d: %s from %s", id, resp.Status, apiURL)
	}
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		return o, fmt.Errorf("order wait: order %d: %w", id, err)
	}
	return o, nil
}
