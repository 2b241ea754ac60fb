// Package drawcli is `seckill draw verify`: it reads a sale's published
// draw through the API (docs/API.md "Fair start") and checks it with
// draw.Verify. It needs nothing of seckill but the API's URL (and, for
// the admitted orders, an admin token), as anyone checking a draw would.
package drawcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/cli"
)

// help is the help of `seckill draw verify`, and of `seckill draw`, its
// one subcommand; env is what the caller reads (Options.Env).
func help(env []cli.Var) cli.Help {
	return cli.Help{
		Usage: "seckill draw verify --sale ID [--api URL] [--json]",
		About: `Recomputes a sale's draw from what the API publishes, as anyone can
(docs/API.md "Fair start"), and checks each piece:
  - the revealed seed's SHA-256 is the commitment shown since the lobby opened;
  - the lines (<entry> <sku> <quantity>) are well-formed, their entries
    distinct, sorted ascending, as many as declared;
  - each variant's stock at the draw is at most the sale's now;
  - K, the entries admitted: per variant, in rank order, those whose variant
    still has their quantity (after the first that does not fit, none);
  - the orders the draw admitted (read as an admin) are those K entries',
    one order each, for the entry's variant and quantity.
Ranks are recomputed from the seed and the entries: an entry's rank is its
place when the entries are sorted by SHA-256(seed bytes || entry bytes).

--api defaults to $SECKILL_API_URL, else http://$SECKILL_HTTP_ADDR. The
order list needs an admin token (SECKILL_ADMIN_TOKEN, or one signed with
SECKILL_JWT_SECRET, the dev secret when unset); without one its checks are
skipped and said so. Exits non-zero when any check fails.`,
		Env: env,
	}
}

// ErrFailed is returned when the draw does not check out.
var ErrFailed = errors.New("draw verify: the draw does not check out")

// Options are what the command needs from its caller.
type Options struct {
	// DefaultAPI is --api's default.
	DefaultAPI string
	// AdminToken returns the bearer token for the order list.
	AdminToken func() (string, error)
	// HTTP is the client (nil: one with a 10-minute timeout, for a
	// million entries on a slow link).
	HTTP *http.Client
	// Env is what the caller reads from the environment for DefaultAPI
	// and AdminToken, for the help.
	Env []cli.Var
}

// Command runs `seckill draw ...`: it prints the report and returns
// ErrFailed when a check failed. Asked for its help, or given a wrong
// command line, it returns the error cli.Exit prints (internal/cli).
func Command(ctx context.Context, args []string, stdout io.Writer, opts Options) error {
	h := help(opts.Env)
	switch {
	case len(args) == 0:
		return cli.Wrong(errors.New("draw: a subcommand is required (verify)"), h.Short(nil))
	case cli.IsHelp(args[0]):
		args = []string{"verify", "--help"}
	case args[0] != "verify":
		return cli.Wrong(fmt.Errorf("draw: unknown subcommand %q", args[0]), h.Short(nil))
	}
	fs := flag.NewFlagSet("draw verify", flag.ContinueOnError)
	sale := fs.String("sale", "", "sale id")
	apiURL := fs.String("api", opts.DefaultAPI, "API base URL")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	devChain := fs.Bool("dev-chain", false, "accept a draw from seckill's development beacon (seckill dev's), whose key anyone can derive; refused without it")
	round := fs.Uint64("round", 0, "the beacon round the sale showed when its lobby opened, if you kept it: the draw must have used it")
	root := fs.String("root", "", "the entries_root GET /draw showed when the lobby closed, if you kept it: the draw must publish it")
	if err := h.Parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Wrong(fmt.Errorf("draw verify: unexpected arguments %q", fs.Args()), h.Short(fs))
	}
	if id, err := strconv.ParseInt(*sale, 10, 64); err != nil || id <= 0 {
		return errors.New("draw verify: --sale must be a sale id")
	}
	c := &Client{Base: strings.TrimRight(*apiURL, "/"), HTTP: opts.HTTP, AdminToken: opts.AdminToken}
	p, err := c.Fetch(ctx, *sale)
	if err != nil {
		return fmt.Errorf("draw verify: %w", err)
	}
	p.DevChainOK, p.PinnedRound, p.PinnedRoot = *devChain, *round, *root
	rep := draw.Verify(p)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if _, err := io.WriteString(stdout, rep.String()); err != nil {
		return err
	}
	if !rep.OK() {
		return ErrFailed
	}
	return nil
}

// Client reads a published draw from the API.
type Client struct {
	Base       string // e.g. http://127.0.0.1:8080
	HTTP       *http.Client
	AdminToken func() (string, error) // nil: the order list is not read
}

// apiError is an answer other than 2xx.
type apiError struct {
	Status int
	Code   seckill.Code
	Detail string
}

func (e *apiError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Detail)
	}
	return fmt.Sprintf("%d %s: is that seckill's API?", e.Status, http.StatusText(e.Status))
}

// maxEntriesHint bounds the room reserved ahead for the entries, whatever
// the draw declares.
const maxEntriesHint = 1 << 24

// Fetch reads the sale's published draw: the draw, the sale (stock and
// commitment), the entries (streamed: memory for their 16 bytes each) and,
// as an admin, the admitted orders.
func (c *Client) Fetch(ctx context.Context, saleID string) (draw.Published, error) {
	p := draw.Published{SaleID: saleID}
	base := "/api/v1/sales/" + url.PathEscape(saleID)
	d, err := c.Draw(ctx, saleID)
	if err != nil {
		return p, err
	}
	p.Commitment, p.Seed, p.DeclaredEntries, p.Admitted, p.EndedAtRank = d.Commitment, d.Seed, d.Entries, d.Admitted, d.EndedAtRank
	for _, v := range d.Variants {
		p.Variants = append(p.Variants, draw.Variant{SKU: v.SKU, Stock: v.Stock, Admitted: v.Admitted})
	}

	var s seckill.SaleJSON
	if err := c.getJSON(ctx, base, "", &s); err != nil {
		return p, fmt.Errorf("reading the sale: %w", err)
	}
	p.Stock, p.SaleEndsAt, p.ReadAt = s.Stock.Total, s.EndsAt, time.Now()
	p.Taken = s.Stock.Sold + s.Stock.Locked
	for _, v := range s.Variants {
		p.SaleVariants = append(p.SaleVariants, draw.Variant{SKU: v.SKU, Stock: v.Stock.Total})
	}
	if s.Draw != nil {
		p.SaleCommitment = s.Draw.Commitment
		if b := s.Draw.Beacon; b != nil {
			p.SaleBeacon = &draw.PublishedBeacon{ChainHash: b.ChainHash, Round: b.Round}
		}
	}
	p.SaleStartsAt = s.StartsAt
	p.EntriesRoot, p.CommittedAt = d.EntriesRoot, d.CommittedAt
	if b := d.Beacon; b != nil {
		p.Beacon = &draw.PublishedBeacon{ChainHash: b.ChainHash, Round: b.Round, Signature: b.Signature, Randomness: b.Randomness}
	}

	resp, err := c.get(ctx, base+"/draw/entries", "")
	if err != nil {
		return p, fmt.Errorf("reading the entries: %w", err)
	}
	p.Entries, err = draw.ReadEntries(resp.Body, int(min(max(d.Entries, 0), maxEntriesHint)))
	_ = resp.Body.Close()
	if err != nil {
		return p, fmt.Errorf("reading the entries: %w", err)
	}

	p.Orders, err = c.Orders(ctx, saleID)
	var unavailable *ordersUnavailable
	if errors.As(err, &unavailable) {
		p.Orders, p.OrdersUnavailable = nil, unavailable.why
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("reading the admitted orders: %w", err)
	}
	return p, nil
}

// Draw reads GET /api/v1/sales/{id}/draw: the sale's draw, once done.
func (c *Client) Draw(ctx context.Context, saleID string) (seckill.PublishedDrawJSON, error) {
	var d seckill.PublishedDrawJSON
	err := c.getJSON(ctx, "/api/v1/sales/"+url.PathEscape(saleID)+"/draw", "", &d)
	var ae *apiError
	switch {
	case err == nil && d.Seed == "":
		// Committed, not drawn: the entries' root is out, the ranks wait
		// for the beacon round.
		round := ""
		if d.Beacon != nil {
			round = fmt.Sprintf(", waiting for beacon round %d", d.Beacon.Round)
		}
		return d, fmt.Errorf("sale %s has not drawn yet: its %d entries are committed (root %s)%s; try again once the draw is done", saleID, d.Entries, d.EntriesRoot, round)
	case err == nil:
		return d, nil
	case errors.As(err, &ae) && ae.Code == seckill.CodeDrawInProgress:
		return d, fmt.Errorf("sale %s has not drawn yet (%w): try again once the draw is done", saleID, err)
	case errors.As(err, &ae) && ae.Code == seckill.CodeNoLobby:
		return d, fmt.Errorf("sale %s has no lobby, so no draw (%w)", saleID, err)
	}
	return d, fmt.Errorf("reading the draw: %w", err)
}

// ordersUnavailable: the order list cannot be read for want of an admin
// token (none, or one the API refuses); why says which.
type ordersUnavailable struct{ why string }

func (e *ordersUnavailable) Error() string { return e.why }

// Orders reads GET /api/v1/sales/{id}/draw/orders as an admin: the orders
// the draw admitted. Without an admin token, or with one the API refuses,
// the error is an *ordersUnavailable saying why.
func (c *Client) Orders(ctx context.Context, saleID string) ([]draw.Order, error) {
	if c.AdminToken == nil {
		return nil, &ordersUnavailable{"no admin token"}
	}
	tok, err := c.AdminToken()
	if err != nil {
		return nil, &ordersUnavailable{"no admin token: " + err.Error()}
	}
	orders, err := c.orders(ctx, "/api/v1/sales/"+url.PathEscape(saleID)+"/draw/orders", tok)
	var ae *apiError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		return nil, &ordersUnavailable{err.Error() + " (the order list needs an admin token: is SECKILL_JWT_SECRET the API's, or SECKILL_ADMIN_TOKEN set?)"}
	}
	return orders, err
}

// orders streams {"orders": [...]} one order at a time.
func (c *Client) orders(ctx context.Context, path, token string) ([]draw.Order, error) {
	resp, err := c.get(ctx, path, token)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	dec := json.NewDecoder(resp.Body)
	bad := func(err error) error { return fmt.Errorf("unexpected answer from %s: %w", c.Base, err) }
	if err := expectDelim(dec, '{'); err != nil {
		return nil, bad(err)
	}
	orders := []draw.Order{}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad(err)
		}
		if tok != "orders" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, bad(err)
			}
			continue
		}
		seen = true
		if err := expectDelim(dec, '['); err != nil {
			return nil, bad(err)
		}
		for dec.More() {
			var o seckill.DrawOrderJSON
			if err := dec.Decode(&o); err != nil {
				return nil, bad(err)
			}
			orders = append(orders, draw.Order{ID: o.OrderID, Entry: o.Entry, Rank: o.Rank, SKU: o.SKU, Quantity: o.Quantity})
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, bad(err)
		}
	}
	if !seen {
		return nil, bad(errors.New(`no "orders"`))
	}
	return orders, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

func (c *Client) getJSON(ctx context.Context, path, token string, out any) error {
	resp, err := c.get(ctx, path, token)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("unexpected answer from %s%s: %w", c.Base, path, err)
	}
	return nil
}

// get answers a 2xx response (its body for the caller to close), or an
// *apiError.
func (c *Client) get(ctx context.Context, path, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("API URL %q: %w", c.Base, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("API not reachable at %s: point --api or SECKILL_API_URL at it: %w", c.Base, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	ae := &apiError{Status: resp.StatusCode}
	var body struct {
		Code   seckill.Code `json:"code"`
		Detail string       `json:"detail"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) == nil {
		ae.Code, ae.Detail = body.Code, body.Detail
	}
	return nil, ae
}
