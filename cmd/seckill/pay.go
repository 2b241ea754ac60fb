package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/cli"
)

// pay plays the payment provider in development: it sends the API a
// Stripe-style event for an order, signed with the webhook secret, exactly
// as a provider would; with --wait it then waits for the order's saga to
// decide the order.
func payHelp() cli.Help {
	return cli.Help{
		Usage: "seckill pay --order ID [--fail] [--amount N] [--event ID] [--api URL] [--wait [--timeout " + cli.Duration(app.DefaultOrderWait) + "]]",
		About: `Plays the dev payment provider: reads the order through the API as an
admin, for its amount, then sends the API a Stripe-style
payment_intent.succeeded event for it (payment_intent.payment_failed with
--fail), signed with SECKILL_WEBHOOK_SECRET (the dev secret when unset),
as a provider would. With --wait it then waits, as seckill order wait
does, until the order is decided and its saga has ended.`,
		Env: app.Env(append(append([]string{"SECKILL_HTTP_ADDR", "SECKILL_WEBHOOK_SECRET"}, app.AdminEnv()...), app.TemporalEnv()...)...),
	}
}

func pay(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pay", flag.ContinueOnError)
	orderID := fs.String("order", "", "order id")
	fail := fs.Bool("fail", false, "send payment_intent.payment_failed instead of succeeded")
	apiURL := fs.String("api", "http://"+cfg.HTTPAddr, "API base URL")
	amount := fs.Int64("amount", -1, "amount in cents; -1: the order's")
	eventID := fs.String("event", "", "event id (default: a new one; repeat one to test duplicates)")
	wait := fs.Bool("wait", false, "then wait until the order is decided (PAID or CLOSED) and its saga has ended, and print it, as seckill order wait does")
	timeout := fs.Duration("timeout", app.DefaultOrderWait, "with --wait: how long to wait")
	if err := payHelp().Parse(fs, args); err != nil {
		return err
	}
	id, err := strconv.ParseInt(*orderID, 10, 64)
	if err != nil {
		return errors.New("pay: --order must be an order id")
	}
	cfg.WithDevSecrets()
	client := &http.Client{Timeout: 10 * time.Second}

	// Read the order (as an admin) for its amount and currency.
	admin, err := cfg.AdminBearer("payment-provider", time.Minute)
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodGet, *apiURL+"/api/v1/orders/"+*orderID, nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	var order seckill.OrderJSON
	err = json.NewDecoder(resp.Body).Decode(&order)
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("pay: the API at %s has no order %s: use the order_id of a claim's 202 (and --api, or SECKILL_HTTP_ADDR, for an API elsewhere)", *apiURL, *orderID)
	case resp.StatusCode != http.StatusOK || err != nil:
		return fmt.Errorf("pay: order %s: %s from %s", *orderID, resp.Status, *apiURL)
	}
	if *amount < 0 {
		*amount = order.AmountCents
	}
	typ := seckill.PaymentSucceeded
	if *fail {
		typ = seckill.PaymentFailed
	}
	if *eventID == "" {
		*eventID = "evt_dev_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	body := api.EventBody(seckill.PaymentEvent{
		EventID: *eventID, Type: typ, PaymentIntentID: "pi_" + *eventID, AmountCents: *amount, Currency: order.Currency,
	}, id, time.Now())
	req, _ = http.NewRequest(http.MethodPost, *apiURL+"/api/v1/payments/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", api.Sign(body, cfg.WebhookSecret, time.Now()))
	resp, err = client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(stdout, "%s %s -> %s %s\n", typ, *eventID, resp.Status, bytes.TrimSpace(answer))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pay: webhook answered %s", resp.Status)
	}
	if *wait {
		line, err := app.WaitOrder(ctx, cfg, *apiURL, id, "", *timeout)
		if line != "" {
			fmt.Fprintln(stdout, line)
		}
		return err
	}
	return nil
}
