//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// createShoeSale creates an open sale of two sizes, EU 42 (stock42 at
// 120.00 EUR) and EU 43 (stock43 at 125.00 EUR), at most 2 per buyer, and
// returns its id.
func (s *system) createShoeSale(stock42, stock43 int) string {
	s.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Runner 1", "currency": "eur", "limit_per_buyer": 2,
		"variants": []map[string]any{
			{"sku": "eu-42", "name": "EU 42", "price_cents": 12000, "stock": stock42},
			{"sku": "eu-43", "name": "EU 43", "price_cents": 12500, "stock": stock43},
		},
		"payment_timeout_seconds": 600,
		"starts_at":               now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(s.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(s.t)["id"].(string)
}

// signInAs signs the browser in on a sale's page as user, signing out
// whoever was signed in.
func signInAs(t *testing.T, ctx context.Context, pageURL, user string) {
	t.Helper()
	do(t, ctx, "sign in as "+user,
		chromedp.Navigate(pageURL),
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
		chromedp.Reload(),
		chromedp.WaitVisible("#signin-button"),
		chromedp.SetValue("#signin-name", user),
		chromedp.Click("#signin-button"),
		chromedp.WaitVisible("#who-user"),
	)
}

// size is the selector of a row of the size list, or of sel inside it.
func size(sku, sel string) string {
	return strings.TrimSpace(`#size-list .size[data-sku="` + sku + `"] ` + sel)
}

// recordPosts makes the page keep the path and body of every POST it
// sends, in window.posted, for the test to read with posted.
func recordPosts(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, "record the page's requests", chromedp.Evaluate[chromedp.Void](`{ window.posted = []; const f = window.fetch;
		window.fetch = (u, o) => { if (o && o.method === "POST") window.posted.push({path: String(u), body: o.body || ""}); return f(u, o); }; }`))
}

type posted struct {
	Path string `json:"path"`
	Body string `json:"body"`
}

// postedTo is the bodies the page POSTed to paths ending in suffix.
func postedTo(t *testing.T, ctx context.Context, suffix string) []string {
	t.Helper()
	all, err := chromedp.Run(ctx, chromedp.Evaluate[[]posted](`window.posted`))
	require.NoError(t, err)
	var bodies []string
	for _, p := range all {
		if strings.HasSuffix(p.Path, suffix) {
			bodies = append(bodies, p.Body)
		}
	}
	return bodies
}

// A sale of sizes in a real browser (issue 32): a buyer chooses a size and
// a quantity with the keyboard, sees each size's price and stock and the
// amount, claims two of a size, and pays that amount; the next buyer asks
// for more than is left and is told how many are, then joins the waiting
// line of the sold-out size, and a unit of that size comes to them. A sale
// of one variant with a limit of 2 offers the quantity alone.
func TestShopper_ChoosesASizeAndAQuantityInBrowser(t *testing.T) {
	s := startSystem(t, systemOptions{})
	shop := pages(t, s) // the page's requests checked against the contract
	sale := s.createShoeSale(3, 1)
	// EU 43's one unit goes before the shopper comes: it is sold out.
	early := s.mustDo("POST", "/api/v1/sales/"+sale+"/claims", s.token("early-bird", false), []byte(`{"sku": "eu-43"}`))
	require.Equal(t, http.StatusAccepted, early.status, "%s", early.body)
	page := shop + "/sales/" + sale

	ctx := browser(t)
	// The list of sales gives a price of sizes at several prices as "from"
	// the lowest.
	link := `a[href="/sales/` + sale + `"]`
	do(t, ctx, "open the shop", chromedp.Navigate(shop+"/"), chromedp.WaitVisible(link))
	require.Equal(t, "from €120.00", text(t, ctx, `#sales li:has(`+link+`) .price`))
	signInAs(t, ctx, page, "size-shopper")
	do(t, ctx, "the sizes, EU 43 sold out",
		chromedp.WaitVisible(size("eu-43", ".size-join")),
		chromedp.WaitVisible("#quantity-row"),
	)
	require.Equal(t, "EU 42 €120.00 3 left", strings.Join(strings.Fields(text(t, ctx, size("eu-42", "label"))), " "))
	require.Equal(t, "EU 43 €125.00 sold out", strings.Join(strings.Fields(text(t, ctx, size("eu-43", "label"))), " "))
	soldOut, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#size-list .size[data-sku="eu-43"]').classList.contains("sold-out") &&
		document.getElementById("size-eu-43").disabled && !document.getElementById("size-eu-42").disabled`))
	require.NoError(t, err)
	require.True(t, soldOut, "EU 43 is greyed and cannot be chosen; EU 42 can")
	require.True(t, hidden(t, ctx, size("eu-42", ".size-join")), "a size in stock offers no waiting line")
	require.Equal(t, "Choose a size.", text(t, ctx, "#claim-why"), "no size is chosen for the buyer")
	screenshot(t, ctx, "variants-choose-a-size.png")

	// The keyboard alone: Space chooses the size, the arrow the quantity,
	// Enter presses Buy now.
	recordPosts(t, ctx)
	do(t, ctx, "choose EU 42 and 2 with the keyboard",
		chromedp.Focus("#size-eu-42"),
		chromedp.KeyEvent(" "),
		chromedp.Focus("#quantity"),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.WaitEnabled("#claim"),
		chromedp.Poll[chromedp.Void](`document.getElementById("amount").textContent.includes("240.00")`),
	)
	require.Equal(t, "Total €240.00 (EU 42, 2 × €120.00)", text(t, ctx, "#amount"))
	screenshot(t, ctx, "variants-eu-42-two-chosen.png")
	do(t, ctx, "claim",
		chromedp.Focus("#claim"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
		chromedp.Poll[chromedp.Void](`document.querySelector('#size-list .size[data-sku="eu-42"] .size-left').textContent === "1 left"`),
	)
	require.Equal(t, []string{`{"sku":"eu-42","quantity":2}`}, postedTo(t, ctx, "/claims"))
	require.Equal(t, "Size EU 42, 2 units: €240.00", text(t, ctx, "#order-item"))
	require.Equal(t, "Pay €240.00", text(t, ctx, "#pay"))
	orderID := text(t, ctx, "#order-id")
	o := s.order(orderID, "size-shopper")
	require.Equal(t, "eu-42", o.SKU)
	require.Equal(t, 2, o.Quantity)
	require.Equal(t, int64(24000), o.AmountCents)
	screenshot(t, ctx, "variants-order-eu-42-two.png")
	do(t, ctx, "pay on the dev checkout",
		chromedp.Click("#pay"),
		chromedp.WaitEnabled("#checkout-pay"),
		chromedp.Click("#checkout-pay"),
		chromedp.WaitVisible(`#order-status[data-status="PAID"]`),
	)
	require.Equal(t, "Paid €240.00.", text(t, ctx, "#order-detail"))
	require.Equal(t, "Size EU 42, 2 units: €240.00", text(t, ctx, "#order-item"), "the order, read again after the checkout, names its size")
	require.Equal(t, seckill.StatusPaid, s.order(orderID, "size-shopper").Status)
	screenshot(t, ctx, "variants-order-eu-42-two-paid.png")

	// The next buyer: two of EU 42 are not there any more.
	signInAs(t, ctx, page, "size-waiter")
	recordPosts(t, ctx)
	do(t, ctx, "ask for 2 of EU 42, of which 1 is left",
		chromedp.WaitVisible(size("eu-43", ".size-join")),
		chromedp.Click("#size-eu-42"),
		chromedp.SetValue("#quantity", "2"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("quantity").dispatchEvent(new Event("change"))`),
		chromedp.WaitEnabled("#claim"),
		chromedp.Click("#claim"),
		chromedp.WaitVisible("#message"),
	)
	require.Equal(t, "Only 1 left of EU 42: choose 1, or another size.", text(t, ctx, "#message"))
	require.True(t, hidden(t, ctx, "#order"), "all or nothing: no order")
	screenshot(t, ctx, "variants-not-enough-stock.png")

	// The sold-out size's waiting line: the join names EU 43.
	do(t, ctx, "join EU 43's waiting line",
		chromedp.Click(size("eu-43", ".size-join")),
		chromedp.WaitVisible("#leave"),
	)
	require.Equal(t, "You are next in line for EU 43.", text(t, ctx, "#wait-status"))
	require.Equal(t, []string{`{"sku":"eu-43"}`}, postedTo(t, ctx, "/waitlist"))
	require.True(t, hidden(t, ctx, size("eu-43", ".size-join")), "one line per buyer: no join while in one")
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, "leave", focused, "the keyboard's focus follows the pressed button to Leave")
	screenshot(t, ctx, "variants-sold-out-size-joined-line.png")

	// The early bird cancels: their EU 43 comes to the buyer in its line.
	earlyID := early.json(t)["order_id"].(string)
	s.waitOrder(earlyID, "early-bird", seckill.StatusAwaitingPayment, 30*time.Second)
	c := s.mustDo("POST", "/api/v1/orders/"+earlyID+"/cancel", s.token("early-bird", false), nil)
	require.Equal(t, http.StatusAccepted, c.status, "%s", c.body)
	do(t, ctx, "EU 43 comes to the waiting buyer",
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
	)
	require.Equal(t, "Size EU 43, 1 unit: €125.00", text(t, ctx, "#order-item"))
	waited := s.order(text(t, ctx, "#order-id"), "size-waiter")
	require.Equal(t, "eu-43", waited.SKU)
	require.Equal(t, int64(12500), waited.AmountCents)
	screenshot(t, ctx, "variants-waiting-line-admitted-eu-43.png")
	do(t, ctx, "cancel it", chromedp.Click("#cancel"), chromedp.WaitVisible(`#order-status[data-status="CLOSED"]`))

	// A sale of one variant with a limit of 2: the quantity, no sizes.
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Socks", "price_cents": 500, "currency": "usd", "stock": 5, "limit_per_buyer": 2,
		"payment_timeout_seconds": 600,
		"starts_at":               now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	socks := r.json(t)["id"].(string)
	do(t, ctx, "claim 2 of a sale of one variant",
		chromedp.Navigate(shop+"/sales/"+socks),
		chromedp.WaitEnabled("#claim"),
		chromedp.WaitVisible("#quantity-row"),
		chromedp.SetValue("#quantity", "2"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("quantity").dispatchEvent(new Event("change"))`),
		chromedp.Poll[chromedp.Void](`document.getElementById("amount").textContent.includes("10.00")`),
	)
	require.True(t, hidden(t, ctx, "#sizes"), "one variant: no size list")
	require.Equal(t, "Total $10.00 (2 × $5.00)", text(t, ctx, "#amount"))
	recordPosts(t, ctx)
	do(t, ctx, "claim",
		chromedp.Click("#claim"),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
	)
	require.Equal(t, []string{`{"sku":"default","quantity":2}`}, postedTo(t, ctx, "/claims"))
	require.Equal(t, "2 units: $10.00", text(t, ctx, "#order-item"))
	screenshot(t, ctx, "variants-one-variant-quantity-two.png")
	do(t, ctx, "cancel it", chromedp.Click("#cancel"), chromedp.WaitVisible(`#order-status[data-status="CLOSED"]`))

	s.requireAudit(sale)
	s.requireAudit(socks)
}
