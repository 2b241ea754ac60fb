package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/cli"
)

// The synopsis of each `seckill sale` subcommand.
const (
	saleCreateUsage = `seckill sale create --name NAME (--price 9.90 --stock 100 | --variant SKU:NAME:PRICE:STOCK ...)
                    [--limit-per-buyer 1..100] [--currency usd]
                    [--starts now|+10m|2026-11-22T10:00:00Z] [--ends +1h|RFC 3339]
                    [--timeout 15m] [--segments 1..64]
                    [--presale-starts-at now|+DURATION|RFC 3339 --presale-claim /groups=vip]`
	saleListUsage    = "seckill sale list [--limit 50]"
	saleShowUsage    = "seckill sale show ID"
	saleStatsUsage   = "seckill sale stats ID [--watch 2s]"
	saleRestockUsage = "seckill sale restock --sale ID --sku SKU --add N [--key KEY]"
)

// saleHelp is the help of `seckill sale sub`, or of `seckill sale` when
// sub is none of its subcommands.
func saleHelp(sub string) cli.Help {
	h := cli.Help{
		About: `Every subcommand takes --json (print the API's JSON) and --api URL (default
$SECKILL_API_URL, else http://$SECKILL_HTTP_ADDR). They act as an admin
(SECKILL_ADMIN_TOKEN, or a short-lived token signed with SECKILL_JWT_SECRET,
the dev secret when unset).`,
		Env: Env(append([]string{"SECKILL_API_URL", "SECKILL_HTTP_ADDR"}, AdminEnv()...)...),
	}
	var about string
	switch sub {
	case "create":
		h.Usage, about = saleCreateUsage, "Creates a sale and prints it, with its shop page."
	case "list":
		h.Usage, about = saleListUsage, "Lists the sales, newest first."
	case "show":
		h.Usage, about = saleShowUsage, "Prints a sale: its window, price, payment timeout and stock."
	case "stats":
		h.Usage, about = saleStatsUsage, `Prints a sale's funnel: stock, claims, orders, refunds, revenue and when it
sold out; with --watch, again every interval until interrupted.`
	case "restock":
		h.Usage, about = saleRestockUsage, `Adds N units to the variant SKU of a sale (a sale made without variants has
one, default): to its waitlist first, then to open claims; a sold-out sale
is on sale again. Prints the restock's key, then the sale. The key makes it
safe to run again: after a failure (a 503 says the units are recorded),
run it again with --key KEY and nothing is added twice.`
	default:
		h.Usage = strings.Join([]string{saleCreateUsage, saleListUsage, saleShowUsage, saleStatsUsage, saleRestockUsage}, "\n")
		return h
	}
	h.About = about + "\n\n" + h.About
	return h
}

// SaleCommand runs `seckill sale ...` against the API: operators need no
// curl. now is the clock for relative times (+10m).
func SaleCommand(ctx context.Context, cfg Config, getenv func(string) string, args []string, stdout io.Writer, now time.Time) error {
	switch {
	case len(args) == 0:
		return cli.Wrong(errors.New("sale: a subcommand is required (create, list, show, stats, restock)"), saleHelp("").Short(nil))
	case cli.IsHelp(args[0]):
		return cli.ShowHelp(saleHelp("").Text(nil))
	}
	sub, args := args[0], args[1:]
	h := saleHelp(sub)
	fs := flag.NewFlagSet("sale "+sub, flag.ContinueOnError)
	defaultAPI := getenv("SECKILL_API_URL")
	if defaultAPI == "" {
		defaultAPI = "http://" + cfg.HTTPAddr
	}
	apiURL := fs.String("api", defaultAPI, "API base URL")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	c := &saleClient{cfg: cfg, http: &http.Client{Timeout: 15 * time.Second}}
	switch sub {
	case "create":
		name := fs.String("name", "", "sale name (required)")
		price := fs.String("price", "", "unit price in major units, e.g. 9.90 (required)")
		currency := fs.String("currency", "usd", "ISO 4217 currency code")
		stock := fs.Int64("stock", 0, "units for sale (required)")
		starts := fs.String("starts", "now", "start: now, +DURATION from now, or RFC 3339")
		ends := fs.String("ends", "+1h", "end: +DURATION from the start, or RFC 3339")
		timeout := fs.Duration("timeout", 15*time.Minute, "time each winner has to pay (5s..24h)")
		segments := fs.Int("segments", 1, "segments the Redis stock is split into, each in its own Cluster hash slot (1..64)")
		var variants variantFlags
		fs.Var(&variants, "variant", "a variant as SKU:NAME:PRICE:STOCK, e.g. eu-42:EU 42:120.00:40 (repeat for each; instead of --price and --stock)")
		limit := fs.Int("limit-per-buyer", 1, "the most units one buyer's order may hold (1..100)")
		presaleAt := fs.String("presale-starts-at", "", "a members' presale from: now, +DURATION from now, or RFC 3339 (before --starts; with --presale-claim)")
		presaleClaim := fs.String("presale-claim", "", "who is a member: POINTER=VALUE in the buyer's token, as SECKILL_ADMIN_CLAIM is written, e.g. /groups=vip")
		if _, err := parseFlags(h, fs, args, 0); err != nil {
			return err
		}
		c.base = strings.TrimRight(*apiURL, "/")
		body, err := newSale{name: *name, price: *price, currency: *currency, stock: *stock,
			starts: *starts, ends: *ends, timeout: *timeout, segments: *segments, variants: variants, limit: *limit,
			presaleAt: *presaleAt, presaleClaim: *presaleClaim}.body(now)
		if err != nil {
			return err
		}
		var sale seckill.SaleJSON
		raw, err := c.do(ctx, http.MethodPost, "/api/v1/sales", body, &sale)
		if err != nil {
			return fmt.Errorf("sale create: %w", err)
		}
		if *asJSON {
			return writeJSON(stdout, raw)
		}
		printSale(stdout, sale)
		fmt.Fprintf(stdout, "\nshop page: %s/sales/%s\n", c.base, sale.ID)
		return nil
	case "list":
		limit := fs.Int("limit", 50, "at most this many sales, newest first (1..200)")
		if _, err := parseFlags(h, fs, args, 0); err != nil {
			return err
		}
		c.base = strings.TrimRight(*apiURL, "/")
		var list struct {
			Sales []seckill.SaleJSON `json:"sales"`
		}
		raw, err := c.do(ctx, http.MethodGet, "/api/v1/sales?limit="+strconv.Itoa(*limit), nil, &list)
		if err != nil {
			return fmt.Errorf("sale list: %w", err)
		}
		if *asJSON {
			return writeJSON(stdout, raw)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATE\tPRICE\tLEFT\tSOLD\tSTARTS\tENDS")
		for _, s := range list.Sales {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", s.ID, s.Name, s.State, money(s.PriceCents, s.Currency),
				s.Stock.Remaining, s.Stock.Total, s.Stock.Sold, s.StartsAt.Format(time.RFC3339), s.EndsAt.Format(time.RFC3339))
		}
		if len(list.Sales) == 0 {
			fmt.Fprintln(tw, "(no sales yet: seckill sale create --help)")
		}
		return tw.Flush()
	case "show":
		pos, err := parseFlags(h, fs, args, 1)
		if err != nil {
			return err
		}
		c.base = strings.TrimRight(*apiURL, "/")
		var sale seckill.SaleJSON
		raw, err := c.do(ctx, http.MethodGet, "/api/v1/sales/"+url.PathEscape(pos[0]), nil, &sale)
		if err != nil {
			return fmt.Errorf("sale show: %w", err)
		}
		if *asJSON {
			return writeJSON(stdout, raw)
		}
		printSale(stdout, sale)
		return nil
	case "restock":
		saleID := fs.String("sale", "", "the sale's id (required)")
		sku := fs.String("sku", "", "the variant's sku (required; a sale made without variants has one, default)")
		add := fs.Int64("add", 0, fmt.Sprintf("units to add (1..%d, required)", seckill.MaxRestock))
		key := fs.String("key", "", "the restock's Idempotency-Key (default: a new one, printed): the same key again adds nothing")
		if _, err := parseFlags(h, fs, args, 0); err != nil {
			return err
		}
		c.base = strings.TrimRight(*apiURL, "/")
		return c.restock(ctx, stdout, restockFlags{sale: *saleID, sku: *sku, add: *add, key: *key}, *asJSON)
	case "stats":
		watch := fs.Duration("watch", 0, "print again every interval until interrupted (e.g. 2s)")
		pos, err := parseFlags(h, fs, args, 1)
		if err != nil {
			return err
		}
		c.base = strings.TrimRight(*apiURL, "/")
		for {
			var st seckill.SaleStatsJSON
			raw, err := c.do(ctx, http.MethodGet, "/api/v1/sales/"+url.PathEscape(pos[0])+"/stats", nil, &st)
			if err != nil {
				return fmt.Errorf("sale stats: %w", err)
			}
			if *asJSON {
				if err := writeJSON(stdout, raw); err != nil {
					return err
				}
			} else {
				printStats(stdout, st)
			}
			if *watch <= 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(*watch):
			}
			fmt.Fprintln(stdout)
		}
	}
	return cli.Wrong(fmt.Errorf("sale: unknown subcommand %q", sub), saleHelp("").Short(nil))
}

// parseFlags parses args (flags may come before or after the positional
// arguments) and checks that exactly want positional arguments remain.
func parseFlags(h cli.Help, fs *flag.FlagSet, args []string, want int) ([]string, error) {
	var positional []string
	for {
		if err := h.Parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != want {
		if want == 1 {
			return nil, cli.Wrong(fmt.Errorf("%s: one sale id is required", fs.Name()), h.Short(fs))
		}
		return nil, cli.Wrong(fmt.Errorf("%s: unexpected arguments %q", fs.Name(), positional), h.Short(fs))
	}
	return positional, nil
}

// newSaleBody validates the flags a person is likely to get wrong before
// the API does, with the flag's name in the message.
// newSale is `seckill sale create`'s flags.
type newSale struct {
	name, price, currency string
	stock                 int64
	starts, ends          string
	timeout               time.Duration
	segments              int
	variants              variantFlags
	limit                 int
	// presaleAt and presaleClaim: a members' presale, both or neither.
	presaleAt, presaleClaim string
}

// variantFlags are the --variant flags, each SKU:NAME:PRICE:STOCK.
type variantFlags []string

func (v *variantFlags) String() string     { return strings.Join(*v, ", ") }
func (v *variantFlags) Set(s string) error { *v = append(*v, s); return nil }

// parse reads each flag as a variant of the API's body.
func (v variantFlags) parse() ([]map[string]any, error) {
	out := make([]map[string]any, len(v))
	for i, f := range v {
		parts := strings.Split(f, ":")
		if len(parts) != 4 {
			return nil, fmt.Errorf("--variant %q: want SKU:NAME:PRICE:STOCK, e.g. eu-42:EU 42:120.00:40", f)
		}
		cents, err := parseMoney(parts[2])
		if err != nil {
			return nil, fmt.Errorf("--variant %q: price: %w", f, err)
		}
		stock, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil || stock <= 0 {
			return nil, fmt.Errorf("--variant %q: stock must be a positive number of units", f)
		}
		out[i] = map[string]any{"sku": parts[0], "name": parts[1], "price_cents": cents, "stock": stock}
	}
	return out, nil
}

// body is the POST /api/v1/sales body the flags describe, at now.
func (n newSale) body(now time.Time) ([]byte, error) {
	if strings.TrimSpace(n.name) == "" {
		return nil, errors.New("sale create: --name is required")
	}
	body := map[string]any{"name": n.name, "currency": n.currency, "limit_per_buyer": max(n.limit, 1)}
	switch {
	case len(n.variants) > 0 && (n.price != "" || n.stock != 0):
		return nil, errors.New("sale create: give --variant, or --price and --stock, not both")
	case len(n.variants) > 0:
		vs, err := n.variants.parse()
		if err != nil {
			return nil, fmt.Errorf("sale create: %w", err)
		}
		body["variants"] = vs
	case n.stock <= 0:
		return nil, errors.New("sale create: --stock is required (a positive number of units)")
	default:
		cents, err := parseMoney(n.price)
		if err != nil {
			return nil, fmt.Errorf("sale create: --price: %w", err)
		}
		body["price_cents"], body["stock"] = cents, n.stock
	}
	start, err := parseWhen(n.starts, now)
	if err != nil {
		return nil, fmt.Errorf("sale create: --starts: %w", err)
	}
	end, err := parseWhen(n.ends, start)
	if err != nil {
		return nil, fmt.Errorf("sale create: --ends: %w", err)
	}
	if n.timeout%time.Second != 0 {
		return nil, errors.New("sale create: --timeout must be whole seconds")
	}
	if n.segments < 1 || n.segments > seckill.MaxStockSegments {
		return nil, fmt.Errorf("sale create: --segments must be between 1 and %d", seckill.MaxStockSegments)
	}
	body["starts_at"], body["ends_at"] = start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)
	body["payment_timeout_seconds"], body["stock_segments"] = int64(n.timeout/time.Second), n.segments
	switch {
	case (n.presaleAt == "") != (n.presaleClaim == ""):
		return nil, errors.New("sale create: a presale takes both --presale-starts-at and --presale-claim")
	case n.presaleAt != "":
		at, err := parseWhen(n.presaleAt, now)
		if err != nil {
			return nil, fmt.Errorf("sale create: --presale-starts-at: %w", err)
		}
		body["presale"] = map[string]any{"starts_at": at.UTC().Format(time.RFC3339Nano), "claim": n.presaleClaim}
	}
	return json.Marshal(body)
}

// parseMoney reads "9.90" or "9" as cents.
func parseMoney(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("is required, e.g. 9.90")
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 2 {
		return 0, fmt.Errorf("%q has more than two decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w < 0 || w > math.MaxInt64/100-1 {
		return 0, fmt.Errorf("%q is not an amount like 9.90", s)
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt((frac + "0")[:2], 10, 64); err != nil || f < 0 {
			return 0, fmt.Errorf("%q is not an amount like 9.90", s)
		}
	}
	return w*100 + f, nil
}

// parseWhen reads "now", "+DURATION" (after base) or an RFC 3339 time.
func parseWhen(s string, base time.Time) (time.Time, error) {
	switch {
	case s == "now":
		return base, nil
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%q: want +DURATION like +10m", s)
		}
		return base.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want now, +DURATION or RFC 3339 like 2026-11-22T10:00:00Z", s)
	}
	return t, nil
}

// restockFlags are `seckill sale restock`'s flags.
type restockFlags struct {
	sale, sku string
	add       int64
	key       string
}

// restock adds f.add units to variant f.sku of sale f.sale under f.key (a
// new key when empty), and prints the key and the sale as `sale show`
// does (with asJSON, the API's JSON alone). A failure names the key, so
// the operator can run it again without adding the units twice.
func (c *saleClient) restock(ctx context.Context, stdout io.Writer, f restockFlags, asJSON bool) error {
	switch {
	case f.sale == "":
		return errors.New("sale restock: --sale is required (the sale's id)")
	case f.sku == "":
		return errors.New("sale restock: --sku is required (a sale made without variants has one, default)")
	case f.add < 1 || f.add > seckill.MaxRestock:
		return fmt.Errorf("sale restock: --add must be between 1 and %d units", seckill.MaxRestock)
	}
	if f.key == "" {
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("sale restock: make a key: %w", err)
		}
		f.key = "restock-" + hex.EncodeToString(b)
	}
	body, err := json.Marshal(seckill.RestockJSON{Add: &f.add})
	if err != nil {
		return err
	}
	var sale seckill.SaleJSON
	path := "/api/v1/sales/" + url.PathEscape(f.sale) + "/variants/" + url.PathEscape(f.sku) + "/stock"
	raw, err := c.doWith(ctx, http.MethodPost, path, map[string]string{api.HeaderIdempotencyKey: f.key}, body, &sale)
	if err != nil {
		return fmt.Errorf("sale restock (key %s; run it again with --key %s): %w", f.key, f.key, err)
	}
	if asJSON {
		return writeJSON(stdout, raw)
	}
	fmt.Fprintf(stdout, "restock key: %s\n\n", f.key)
	printSale(stdout, sale)
	return nil
}

type saleClient struct {
	cfg  Config
	base string
	http *http.Client
}

// do calls the API as an admin and decodes a 2xx answer into out. An
// error answer becomes "409 SOLD_OUT: detail".
func (c *saleClient) do(ctx context.Context, method, path string, body []byte, out any) ([]byte, error) {
	return c.doWith(ctx, method, path, nil, body, out)
}

// doWith is do with the request's extra headers.
func (c *saleClient) doWith(ctx context.Context, method, path string, headers map[string]string, body []byte, out any) ([]byte, error) {
	c.cfg.WithDevSecrets()
	tok, err := c.cfg.AdminBearer("seckill-cli", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("API URL %q: %w", c.base, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("API not reachable at %s: start it (make dev, or seckill api), or point --api / SECKILL_API_URL at it: %w", c.base, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Code != "" {
			if p.Code == string(seckill.CodeUnauthenticated) {
				return nil, fmt.Errorf("%d %s: %s (is SECKILL_JWT_SECRET the API's?)", resp.StatusCode, p.Code, p.Detail)
			}
			return nil, fmt.Errorf("%d %s: %s", resp.StatusCode, p.Code, p.Detail)
		}
		return nil, fmt.Errorf("%s from %s: is that seckill's API?", resp.Status, c.base)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("unexpected answer from %s: %w", c.base, err)
	}
	return raw, nil
}

func writeJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func money(cents int64, currency string) string {
	return fmt.Sprintf("%d.%02d %s", cents/100, cents%100, strings.ToUpper(currency))
}

func printSale(w io.Writer, s seckill.SaleJSON) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "sale\t%s  %s\n", s.ID, s.Name)
	fmt.Fprintf(tw, "state\t%s\n", s.State)
	fmt.Fprintf(tw, "price\t%s\n", money(s.PriceCents, s.Currency))
	fmt.Fprintf(tw, "window\t%s .. %s\n", s.StartsAt.Format(time.RFC3339), s.EndsAt.Format(time.RFC3339))
	if s.Presale != nil {
		fmt.Fprintf(tw, "presale\tfrom %s, for tokens with %s\n", s.Presale.StartsAt.Format(time.RFC3339), s.Presale.Claim)
	}
	fmt.Fprintf(tw, "pay within\t%s\n", time.Duration(s.PaymentTimeoutSeconds)*time.Second)
	if s.StockSegments > 1 {
		fmt.Fprintf(tw, "segments\t%d (Redis stock segments)\n", s.StockSegments)
	}
	fmt.Fprintf(tw, "stock\ttotal %d, remaining %d (Redis); available %d, locked %d, sold %d (database)\n",
		s.Stock.Total, s.Stock.Remaining, s.Stock.Available, s.Stock.Locked, s.Stock.Sold)
	if s.LimitPerBuyer > 1 {
		fmt.Fprintf(tw, "limit\t%d units per buyer\n", s.LimitPerBuyer)
	}
	if len(s.Variants) > 1 || (len(s.Variants) == 1 && s.Variants[0].SKU != seckill.DefaultSKU) {
		for _, v := range s.Variants {
			fmt.Fprintf(tw, "  %s\t%s, %s: total %d, remaining %d; available %d, locked %d, sold %d\n", v.SKU, v.Name,
				money(v.PriceCents, s.Currency), v.Stock.Total, v.Stock.Remaining, v.Stock.Available, v.Stock.Locked, v.Stock.Sold)
		}
	}
	_ = tw.Flush()
}

func printStats(w io.Writer, st seckill.SaleStatsJSON) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "sale\t%s  %s  (%s)\n", st.SaleID, st.Name, st.State)
	fmt.Fprintf(tw, "stock\ttotal %d, remaining %d, locked %d, sold %d\n", st.Stock.Total, st.Stock.Remaining, st.Stock.Locked, st.Stock.Sold)
	fmt.Fprintf(tw, "claims\t%d answered: %d admitted, %d replayed%s\n", st.Claims.Total, st.Claims.Admitted, st.Claims.Replayed, byKey(st.Claims.Rejected, "rejected"))
	fmt.Fprintf(tw, "orders\t%d: %d queued, %d awaiting payment, %d paid, %d closed%s\n", st.Orders.Total, st.Orders.Queued,
		st.Orders.AwaitingPayment, st.Orders.Paid, st.Orders.Closed, byKey(st.Orders.ClosedByReason, "closed"))
	fmt.Fprintf(tw, "refunds\t%d pending, %d succeeded, %s\n", st.Refunds.Pending, st.Refunds.Succeeded, money(st.Refunds.AmountCents, st.Currency))
	fmt.Fprintf(tw, "revenue\t%s\n", money(st.RevenueCents, st.Currency))
	if st.SoldOutAt != nil && st.TimeToSellOutSeconds != nil {
		fmt.Fprintf(tw, "sold out\t%s, %.3f s after the start\n", st.SoldOutAt.Format(time.RFC3339Nano), *st.TimeToSellOutSeconds)
	} else {
		fmt.Fprintf(tw, "sold out\tnot yet\n")
	}
	_ = tw.Flush()
}

// byKey formats a count map as "; closed: A 1, B 2", sorted by key.
func byKey[K ~string](m map[K]int64, label string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[K(k)])
	}
	return "; " + label + ": " + strings.Join(parts, ", ")
}
