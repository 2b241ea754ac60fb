//go:build !slim

package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api/contract"
)

// pages serves s's API to the browser through a reverse proxy whose
// every exchange under /api/ is checked against the contract
// (api/openapi.yaml), so the shop page's own requests and the answers it
// reads are checked as the Go clients' are. Started once per test.
func pages(t *testing.T, s *system) string {
	t.Helper()
	target, err := url.Parse(s.info.APIURL)
	require.NoError(t, err)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// What only a browser sends, which the API does not read
			// and the contract does not list: its Sec- headers, and
			// cookies, which seckill never sets but a browser sends to
			// every port of the host (the Temporal UI's _csrf).
			for h := range r.Out.Header {
				if strings.HasPrefix(h, "Sec-") || h == "Cookie" {
					r.Out.Header.Del(h)
				}
			}
		},
		Transport:     contract.Transport(t, nil),
		FlushInterval: -1, // the order's event stream, as it comes
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// chromium finds the browser: $SECKILL_CHROMIUM, or Debian's chromium on
// the PATH. `make test` installs it when missing.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SECKILL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: run `make test` (it installs Debian's chromium), `apt-get install chromium`, or set SECKILL_CHROMIUM")
	return ""
}

// artifact is where a test keeps a file for people to look at
// (test-artifacts/ at the repository root, or $SECKILL_ARTIFACTS).
func artifact(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("SECKILL_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "test-artifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p, err := filepath.Abs(filepath.Join(dir, name))
	require.NoError(t, err)
	return p
}

func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.WindowSize(1100, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(cancelCtx)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// screenshot saves the whole page as test-artifacts/<name>.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG; less is JPEG
	require.NoError(t, err)
	p := artifact(t, name)
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot: %s", p)
}

// text reads the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	require.NoError(t, err, "text of %s", sel)
	return strings.TrimSpace(s)
}

// hidden says whether the element sel is not displayed.
func hidden(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector(`+strconv.Quote(sel)+`)).display === "none"`))
	require.NoError(t, err, "display of %s", sel)
	return v
}

// do runs steps, naming what failed.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...), what)
}

// The newcomer's path, in a real browser: open the shop, sign in with the
// demo sign-in, claim, see the order reserved with its pay-by countdown,
// pay on the dev provider's checkout page, and see it PAID live. Then the
// words a shopper sees on a sold-out sale, and on an order admitted but not
// yet written by its saga (QUEUED), which README "Try it in a browser"
// describes.
func TestShopper_ClaimAndPayInBrowser(t *testing.T) {
	s := startSystem(t, systemOptions{})
	shop := pages(t, s) // the page's requests checked against the contract
	sale := s.createSale(3, 2*time.Minute)
	soldOut := s.createSale(1, 2*time.Minute)
	cancelled := s.createSale(1, 2*time.Minute)
	queued := s.createSale(1, 2*time.Minute)
	r := s.claim(soldOut, "early-bird")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)

	ctx := browser(t)
	link := `a[href="/sales/` + sale + `"]`
	do(t, ctx, "open the shop and the sale",
		chromedp.Navigate(shop+"/"),
		chromedp.WaitVisible(link),
		chromedp.Click(link),
		chromedp.WaitVisible("#signin-button"),
	)
	do(t, ctx, "demo sign-in",
		chromedp.SetValue("#signin-name", "browser-shopper"),
		chromedp.Click("#signin-button"),
		chromedp.WaitVisible("#who-user"),
	)
	require.Equal(t, "browser-shopper", text(t, ctx, "#who-user"))
	// A sale of one variant, one per buyer: no size, no quantity, as before.
	require.True(t, hidden(t, ctx, "#sizes"), "no size list")
	require.True(t, hidden(t, ctx, "#quantity-row"), "no quantity")
	require.True(t, hidden(t, ctx, "#amount"), "the price above is the amount")
	do(t, ctx, "claim",
		chromedp.WaitEnabled("#claim"),
		chromedp.Click("#claim"),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
	)
	require.Regexp(t, `^\d\d:\d\d$`, text(t, ctx, "#payby-countdown"))
	require.True(t, hidden(t, ctx, "#order-item"), "one unit of the one variant: the order reads as before")
	orderID := text(t, ctx, "#order-id")
	screenshot(t, ctx, "shopper-awaiting-payment.png")
	do(t, ctx, "go to the dev checkout", chromedp.Click("#pay"), chromedp.WaitEnabled("#checkout-pay"))
	screenshot(t, ctx, "dev-checkout.png")
	do(t, ctx, "pay", chromedp.Click("#checkout-pay"), chromedp.WaitVisible(`#order-status[data-status="PAID"]`))
	require.Equal(t, "Paid. It is yours!", text(t, ctx, "#order-status"))
	require.Equal(t, "You bought this one: it is yours.", text(t, ctx, "#claim-why"), "the disabled button says why")
	screenshot(t, ctx, "shopper-paid.png")
	require.Equal(t, seckill.StatusPaid, s.order(orderID, "browser-shopper").Status)

	// The operator finds it in the Temporal UI by SaleId and OrderStatus.
	query := url.QueryEscape(fmt.Sprintf(`SaleId=%q AND OrderStatus="PAID"`, sale))
	wfLink := `a[href*="order-` + orderID + `"]`
	do(t, ctx, "find the order in the Temporal UI",
		chromedp.Navigate(s.info.UIURL+"/namespaces/"+s.cfg.Namespace+"/workflows?query="+query),
		chromedp.WaitVisible(wfLink),
	)
	screenshot(t, ctx, "temporal-ui-paid-order.png")

	// A sold-out sale: "Buy now" is disabled, and the page says why.
	do(t, ctx, "open a sold-out sale",
		chromedp.Navigate(shop+"/sales/"+soldOut),
		chromedp.WaitVisible(`#sale-state.SOLD_OUT`),
		chromedp.WaitVisible("#claim-why"),
	)
	msg := text(t, ctx, "#claim-why")
	require.True(t, strings.HasPrefix(msg, "Sold out."), msg)
	disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("claim").disabled`))
	require.NoError(t, err)
	require.True(t, disabled, "Buy now is disabled on a sold-out sale")
	screenshot(t, ctx, "shopper-sold-out.png")

	// The waitlist: join on the sold-out sale, see the place in line; when
	// the early bird cancels, the unit comes to this shopper and the page
	// follows the new order. A reload finds it again.
	do(t, ctx, "join the waitlist",
		chromedp.WaitVisible("#join"),
		chromedp.Click("#join"),
		chromedp.WaitVisible("#leave"),
	)
	require.Equal(t, "You are next in line.", text(t, ctx, "#wait-status"))
	screenshot(t, ctx, "shopper-waitlist.png")
	early := r.json(t)["order_id"].(string)
	s.waitOrder(early, "early-bird", seckill.StatusAwaitingPayment, 30*time.Second)
	c := s.mustDo("POST", "/api/v1/orders/"+early+"/cancel", s.token("early-bird", false), nil)
	require.Equal(t, http.StatusAccepted, c.status, "%s", c.body)
	do(t, ctx, "the released unit becomes the shopper's order",
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
	)
	require.Contains(t, text(t, ctx, "#message"), "it is yours")
	screenshot(t, ctx, "shopper-waitlist-admitted.png")
	waited := text(t, ctx, "#order-id")
	do(t, ctx, "reload: the order is still shown",
		chromedp.Reload(),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
	)
	require.Equal(t, waited, text(t, ctx, "#order-id"))
	require.Equal(t, "browser-shopper", s.order(waited, "browser-shopper").UserID)

	// Changing one's mind: claim, cancel, the unit goes back.
	do(t, ctx, "claim and cancel",
		chromedp.Navigate(shop+"/sales/"+cancelled),
		chromedp.WaitEnabled("#claim"),
		chromedp.Click("#claim"),
		// Wait for the layout to settle: the Pay button and the countdown
		// appear with AWAITING_PAYMENT and move Cancel, and a click lands
		// where the button was when it was found.
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
		chromedp.Click("#cancel"),
		chromedp.WaitVisible(`#order-status[data-status="CLOSED"]`),
	)
	require.Equal(t, "You cancelled the order, and the unit went back on sale.", text(t, ctx, "#order-detail"))

	// QUEUED, as the claim's answer leaves it until the order's events say
	// more (here they never come): payable already, and worded as README
	// "Try it in a browser" says, the same as once the saga has written it.
	do(t, ctx, "claim, the order's events held back",
		chromedp.Navigate(shop+"/sales/"+queued),
		chromedp.WaitEnabled("#claim"),
		chromedp.Evaluate[chromedp.Void](`{ const f = window.fetch;
			window.fetch = (u, o) => String(u).endsWith("/events") ? new Promise(() => {}) : f(u, o); }`),
		chromedp.Click("#claim"),
		chromedp.WaitVisible(`#order-status[data-status="QUEUED"]`),
		chromedp.WaitVisible("#payby-countdown"),
		chromedp.WaitVisible("#pay"),
	)
	require.Equal(t, "Reserved for you: waiting for payment", text(t, ctx, "#order-status"))
	require.Regexp(t, `^Pay .*9\.90`, text(t, ctx, "#pay"))
	screenshot(t, ctx, "shopper-queued.png")
	s.requireAudit(cancelled)
	s.requireAudit(sale)
}
