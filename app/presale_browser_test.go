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
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// vip is the presale claim of these tests' sales: a member's token holds
// "vip" in its groups.
const vip = "/groups=vip"

// memberToken is a buyer token whose claims hold the presale's, as
// `seckill token --user ID --claim /groups=vip` mints it.
func (s *system) memberToken(user string) string {
	s.t.Helper()
	tok, err := s.cfg.Secret().SignWith(user, false, time.Hour, auth.MustAdminClaim(vip))
	require.NoError(s.t, err)
	return tok
}

// createPresaleSale creates a sale of two sizes, EU 42 (stock42) and EU
// 43 (stock43) at 120.00 EUR, one per buyer, whose members' presale
// starts at presaleAt and which opens to everyone in two hours; it returns
// its id.
func (s *system) createPresaleSale(presaleAt time.Time, stock42, stock43 int) string {
	s.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Runner 1, members first", "currency": "eur",
		"variants": []map[string]any{
			{"sku": "eu-42", "name": "EU 42", "price_cents": 12000, "stock": stock42},
			{"sku": "eu-43", "name": "EU 43", "price_cents": 12000, "stock": stock43},
		},
		"payment_timeout_seconds": 600,
		"presale":                 map[string]any{"starts_at": presaleAt.UTC().Format(time.RFC3339), "claim": vip},
		"starts_at":               now.Add(2 * time.Hour).Format(time.RFC3339), "ends_at": now.Add(3 * time.Hour).Format(time.RFC3339),
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(s.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(s.t)["id"].(string)
}

// signInWithToken signs the browser in on a sale's page with tok, as a
// shop's own sign-in leaves a provider's token (the demo sign-in mints
// tokens without a presale's claim).
func signInWithToken(t *testing.T, ctx context.Context, pageURL, user, tok string) {
	t.Helper()
	do(t, ctx, "sign in as "+user+" with a member's token",
		chromedp.Navigate(pageURL),
		chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem("seckill.token", `+jsString(tok)+`); localStorage.setItem("seckill.user", `+jsString(user)+`)`),
		chromedp.Reload(),
		chromedp.WaitVisible("#who-user"),
	)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A sale in its members' presale, in a real browser: a buyer who is not a
// member sees it coming, with the countdown to when everyone may buy and
// why they cannot yet, and is offered no waiting line; a member buys a
// size at once and pays it on the dev checkout, and another member joins
// the line of the size members sold out. Before the presale a member sees
// the countdown to it.
func TestShopper_PresaleMembersBuyFirstInBrowser(t *testing.T) {
	s := startSystem(t, systemOptions{})
	shop := pages(t, s) // the page's requests checked against the contract
	sale := s.createPresaleSale(time.Now().Add(-time.Minute), 3, 1)
	// A member took EU 43's one unit: sold out in the presale.
	r, err := s.do("POST", "/api/v1/sales/"+sale+"/claims", s.memberToken("vip-early"), []byte(`{"sku": "eu-43"}`), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	// Not a member: not yet, whatever the page shows.
	r = s.mustDo("POST", "/api/v1/sales/"+sale+"/claims", s.token("walk-in", false), []byte(`{"sku": "eu-42"}`))
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, string(seckill.CodeSaleNotStarted), r.json(t)["code"])
	page := shop + "/sales/" + sale

	ctx := browser(t)
	signInAs(t, ctx, page, "walk-in")
	do(t, ctx, "the presale, to a buyer who is not a member",
		chromedp.WaitVisible(size("eu-43", "label")),
		chromedp.Poll[chromedp.Void](`document.getElementById("claim-why").textContent.startsWith("Members' presale")`),
		chromedp.Click("#size-eu-42"),
	)
	require.Equal(t, "presale", text(t, ctx, "#sale-state"))
	require.Equal(t, "Starts in", text(t, ctx, "#countdown-label"))
	require.True(t, strings.HasPrefix(text(t, ctx, "#countdown"), "01:5"), "to the public start, two hours away: %s", text(t, ctx, "#countdown"))
	require.Equal(t, "Buy now", text(t, ctx, "#claim"))
	require.True(t, strings.HasPrefix(text(t, ctx, "#claim-why"),
		"Members' presale: only its members can buy now, and your account is not one. You can buy when the sale opens to everyone, "))
	disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("claim").disabled`))
	require.NoError(t, err)
	require.True(t, disabled, "a size chosen, still nothing to buy before the public start")
	require.True(t, hidden(t, ctx, size("eu-43", ".size-join")), "no waiting line either: a join is refused until the public start")
	screenshot(t, ctx, "presale-non-member.png")

	// A member: the same page opens to them.
	signInWithToken(t, ctx, page, "vip-shopper", s.memberToken("vip-shopper"))
	do(t, ctx, "the presale, to a member",
		chromedp.Poll[chromedp.Void](`document.getElementById("claim").textContent === "Members' presale"`),
		chromedp.WaitVisible(size("eu-43", ".size-join")),
	)
	require.Equal(t, "Members' presale: open to everyone in", text(t, ctx, "#countdown-label"))
	require.True(t, strings.HasPrefix(text(t, ctx, "#countdown"), "01:5"), "their head start, two hours: %s", text(t, ctx, "#countdown"))
	require.Equal(t, "Choose a size.", text(t, ctx, "#claim-why"))
	do(t, ctx, "choose EU 42", chromedp.Click("#size-eu-42"), chromedp.WaitEnabled("#claim"))
	require.Equal(t, "", text(t, ctx, "#claim-why"))
	screenshot(t, ctx, "presale-member.png")
	do(t, ctx, "buy in the presale",
		chromedp.Click("#claim"),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#payby-countdown"),
	)
	require.Equal(t, "Size EU 42, 1 unit: €120.00", text(t, ctx, "#order-item"))
	orderID := text(t, ctx, "#order-id")
	o := s.order(orderID, "vip-shopper")
	require.Equal(t, seckill.StatusAwaitingPayment, o.Status)
	require.Equal(t, "eu-42", o.SKU)
	screenshot(t, ctx, "presale-member-order.png")
	do(t, ctx, "pay on the dev checkout",
		chromedp.Click("#pay"),
		chromedp.WaitEnabled("#checkout-pay"),
		chromedp.Click("#checkout-pay"),
		chromedp.WaitVisible(`#order-status[data-status="PAID"]`),
	)
	require.Equal(t, "Paid €120.00.", text(t, ctx, "#order-detail"))
	require.Equal(t, seckill.StatusPaid, s.order(orderID, "vip-shopper").Status)
	screenshot(t, ctx, "presale-member-paid.png")

	// Another member waits for the size members sold out.
	signInWithToken(t, ctx, page, "vip-waiter", s.memberToken("vip-waiter"))
	do(t, ctx, "join EU 43's waiting line in the presale",
		chromedp.WaitVisible(size("eu-43", ".size-join")),
		chromedp.Click(size("eu-43", ".size-join")),
		chromedp.WaitVisible("#leave"),
	)
	require.Equal(t, "You are next in line for EU 43.", text(t, ctx, "#wait-status"))
	screenshot(t, ctx, "presale-member-waiting-line.png")

	// Before its presale a member sees the countdown to it.
	soon := s.createPresaleSale(time.Now().Add(30*time.Minute), 3, 1)
	do(t, ctx, "a presale to come, to a member",
		chromedp.Navigate(shop+"/sales/"+soon),
		chromedp.Poll[chromedp.Void](`document.getElementById("countdown-label").textContent === "Members' presale starts in"`),
	)
	require.True(t, strings.HasPrefix(text(t, ctx, "#countdown"), "29:"), "to the presale, 30 minutes away: %s", text(t, ctx, "#countdown"))
	require.Equal(t, "Members' presale", text(t, ctx, "#claim"))
	require.Equal(t, "scheduled", text(t, ctx, "#sale-state"))
	require.True(t, strings.HasPrefix(text(t, ctx, "#claim-why"), "You are a member: you can buy in the members' presale from "))
	screenshot(t, ctx, "presale-member-before-presale.png")

	s.requireAudit(sale)
}
