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
  - the entries are well-formed, distinct, sorted ascending, as many as declared;
  - K, the number admitted, is min(stock, entries);
  - the orders the draw admitted (read as an admin) are ranks 1..K, one
    order each, every order listed once.
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

// drawJSON is GET /api/v1/sales/{id}/draw.
type drawJSON struct {
	Commitment string `json:"commitment"`
	Seed       string `json:"seed"`
	Entries    int64  `json:"entries"`
	Admitted   int64  `json:"admitted"`
}

// saleJSON is what the check needs of GET /api/v1/sales/{id}.
type saleJSON struct {
	Stock struct {
		Total int64 `json:"total"`
	} `json:"stock"`
	Draw *struct {
		Commitment string `json:"commitment"`
	} `json:"draw"`
}

// orderJSON is one of GET /api/v1/sales/{id}/draw/orders's orders.
type orderJSON struct {
	OrderID string `json:"order_id"`
	Entry   string `json:"entry"`
	Rank    int64  `json:"rank"`
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
	var d drawJSON
	if err := c.getJSON(ctx, base+"/draw", "", &d); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			switch ae.Code {
			case seckill.CodeDrawInProgress:
				return p, fmt.Errorf("sale %s has not drawn yet (%w): try again once the draw is done", saleID, err)
			case seckill.CodeNoLobby:
				return p, fmt.Errorf("sale %s has no lobby, so no draw (%w)", saleID, err)
			}
		}
		return p, fmt.Errorf("reading the draw: %w", err)
	}
	p.Commitment, p.Seed, p.DeclaredEntries, p.Admitted = d.Commitment, d.Seed, d.Entries, d.Admitted

	var s saleJSON
	if err := c.getJSON(ctx, base, "", &s); err != nil {
		return p, fmt.Errorf("reading the sale: %w", err)
	}
	p.Stock = s.Stock.Total
	if s.Draw != nil {
		p.SaleCommitment = s.Draw.Commitment
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

	if c.AdminToken == nil {
		p.OrdersUnavailable = "no admin token"
		return p, nil
	}
	tok, err := c.AdminToken()
	if err != nil {
		p.OrdersUnavailable = "no admin token: " + err.Error()
		return p, nil
	}
	p.Orders, err = c.orders(ctx, base+"/draw/orders", tok)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
			p.Orders, p.OrdersUnavailable = nil, err.Error()+" (the order list needs an admin token: is SECKILL_JWT_SECRET the API's, or SECKILL_ADMIN_TOKEN set?)"
			return p, nil
		}
		return p, fmt.Errorf("reading the admitted orders: %w", err)
	}
	return p, nil
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
			var o orderJSON
			if err := dec.Decode(&o); err != nil {
				return nil, bad(err)
			}
			orders = append(orders, draw.Order{ID: o.OrderID, Entry: o.Entry, Rank: o.Rank})
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
