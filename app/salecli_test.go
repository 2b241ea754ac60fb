//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// cliNow is the CLI's clock in these tests: a minute ago, whole seconds.
var cliNow = time.Now().UTC().Truncate(time.Second).Add(-time.Minute)

func (s *system) saleCLI(args ...string) (string, error) {
	var out bytes.Buffer
	env := func(k string) string {
		if k == "SECKILL_API_URL" {
			return s.info.APIURL
		}
		return ""
	}
	err := app.SaleCommand(context.Background(), s.cfg, env, args, &out, cliNow)
	return out.String(), err
}

func TestSaleCLI_CreateListShowStats(t *testing.T) {
	s := startSystem(t, systemOptions{})

	out, err := s.saleCLI("create", "--name", "CLI coupon", "--price", "9.9", "--stock", "2",
		"--starts", "now", "--ends", "+48h", "--timeout", "30s", "--json")
	require.NoError(t, err)
	var sale seckill.SaleJSON
	require.NoError(t, json.Unmarshal([]byte(out), &sale), out)
	require.Equal(t, "CLI coupon", sale.Name)
	require.Equal(t, int64(990), sale.PriceCents)
	require.Equal(t, int64(30), sale.PaymentTimeoutSeconds)
	require.Equal(t, cliNow, sale.StartsAt)
	require.Equal(t, cliNow.Add(48*time.Hour), sale.EndsAt)

	r := s.claim(sale.ID, "cli-buyer")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	s.claim(sale.ID, "cli-buyer") // ALREADY_CLAIMED

	out, err = s.saleCLI("list")
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^`+sale.ID+`\s+CLI coupon\s+ACTIVE\s+9\.90 USD\s+1/2\s`), out)

	out, err = s.saleCLI("show", sale.ID)
	require.NoError(t, err)
	require.Contains(t, out, "remaining 1 (Redis)")

	require.Eventually(t, func() bool {
		out, err = s.saleCLI("stats", sale.ID)
		require.NoError(t, err)
		return regexp.MustCompile(`claims\s+2 answered: 1 admitted, 0 replayed; rejected: ALREADY_CLAIMED 1`).MatchString(out)
	}, 10*time.Second, 100*time.Millisecond, "stats: %s", out)
	require.Contains(t, out, "sold out  not yet")

	// A sale of sizes, with a limit per buyer.
	out, err = s.saleCLI("create", "--name", "CLI shoe", "--variant", "eu-42:EU 42:120.00:3", "--variant", "eu-43:EU 43:125:5",
		"--limit-per-buyer", "2", "--ends", "+48h")
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^limit\s+2 units per buyer$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\s+eu-42\s+EU 42, 120\.00 USD: total 3, remaining 3; available 3, locked 0, sold 0$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\s+eu-43\s+EU 43, 125\.00 USD: total 5, remaining 5;`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^stock\s+total 8, remaining 8 \(Redis\)`), out)

	// Mistakes are named, with the fix.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--price", "9.90", "--stock", "1"}, "--name is required"},
		{[]string{"create", "--name", "x", "--price", "9.999", "--stock", "1"}, "more than two decimals"},
		{[]string{"create", "--name", "x", "--price", "1", "--stock", "1", "--ends", "tomorrow"}, "want now, +DURATION or RFC 3339"},
		{[]string{"create", "--name", "x", "--price", "1", "--stock", "1", "--timeout", "1s"}, "400 INVALID_REQUEST: payment_timeout_seconds"},
		{[]string{"create", "--name", "x", "--variant", "a:A:1:1", "--price", "1"}, "give --variant, or --price and --stock, not both"},
		{[]string{"create", "--name", "x", "--variant", "a:A:1"}, "want SKU:NAME:PRICE:STOCK"},
		{[]string{"create", "--name", "x", "--variant", "a b:A:1:1"}, "400 INVALID_REQUEST: variants[0].sku"},
		{[]string{"show"}, "one sale id is required"},
		{[]string{"show", "999999"}, "404 SALE_NOT_FOUND"},
		{[]string{"stats", "1", "--api", "http://127.0.0.1:1"}, "API not reachable at http://127.0.0.1:1"},
		{[]string{"frobnicate"}, `unknown subcommand "frobnicate"`},
	} {
		_, err := s.saleCLI(c.args...)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

// `seckill sale restock` adds units under a key it prints, so the
// operator can run it again after a failure and add nothing twice; a
// sold-out sale is on sale again.
func TestSaleCLI_Restock(t *testing.T) {
	s := startSystem(t, systemOptions{})
	out, err := s.saleCLI("create", "--name", "CLI restock", "--price", "5", "--stock", "1", "--ends", "+48h", "--json")
	require.NoError(t, err)
	var sale seckill.SaleJSON
	require.NoError(t, json.Unmarshal([]byte(out), &sale), out)
	require.Equal(t, http.StatusAccepted, s.claim(sale.ID, "first").status)
	require.Equal(t, http.StatusConflict, s.claim(sale.ID, "second").status)

	out, err = s.saleCLI("restock", "--sale", sale.ID, "--sku", "default", "--add", "2")

	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^restock key: (restock-[0-9a-f]{24})$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the key is printed: %s", out)
	key := m[1]
	require.Regexp(t, regexp.MustCompile(`(?m)^state\s+ACTIVE$`), out, "printed as sale show prints it")
	require.Regexp(t, regexp.MustCompile(`(?m)^stock\s+total 3, remaining 2 \(Redis\)`), out)
	require.Equal(t, http.StatusAccepted, s.claim(sale.ID, "second").status, "on sale again")

	// The same key again adds nothing; the key for another restock is refused.
	out, err = s.saleCLI("restock", "--sale", sale.ID, "--sku", "default", "--add", "2", "--key", key, "--json")
	require.NoError(t, err)
	var again seckill.SaleJSON
	require.NoError(t, json.Unmarshal([]byte(out), &again), out)
	require.Equal(t, int64(3), again.Stock.Total)
	_, err = s.saleCLI("restock", "--sale", sale.ID, "--sku", "default", "--add", "5", "--key", key)
	require.ErrorContains(t, err, "422 IDEMPOTENCY_KEY_REUSED")
	require.ErrorContains(t, err, "--key "+key, "a failure names the key to run it again with")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"restock", "--sku", "default", "--add", "1"}, "--sale is required"},
		{[]string{"restock", "--sale", sale.ID, "--add", "1"}, "--sku is required"},
		{[]string{"restock", "--sale", sale.ID, "--sku", "default"}, "--add must be between 1 and 10000000"},
		{[]string{"restock", "--sale", sale.ID, "--sku", "eu-42", "--add", "1"}, "404 VARIANT_NOT_FOUND"},
		{[]string{"restock", "--sale", "999999", "--sku", "default", "--add", "1"}, "404 SALE_NOT_FOUND"},
	} {
		_, err := s.saleCLI(c.args...)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
	out, err = s.saleCLI("show", sale.ID)
	require.NoError(t, err)
	require.Contains(t, out, "total 3,", "nothing added twice")
}
