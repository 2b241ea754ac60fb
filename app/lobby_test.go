//go:build !slim

package app_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/draw"
)

// createLobbySale creates a sale whose lobby opens now and which starts
// after startIn, and returns its id.
func (s *system) createLobbySale(stock int, startIn, timeout time.Duration, segments int) string {
	s.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Lobby sale", "price_cents": 990, "stock": stock,
		"lobby_opens_at": now.Add(-time.Second).Format(time.RFC3339Nano),
		"starts_at":      now.Add(startIn).Format(time.RFC3339Nano), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(timeout / time.Second), "stock_segments": segments,
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(s.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(s.t)["id"].(string)
}

// drawDone reports whether the sale's draw is published: GET /draw
// answers its seed (200 without one: the entries are committed, the draw
// waits for its beacon round).
func (s *system) drawDone(sale string) bool {
	s.t.Helper()
	r := s.mustDo("GET", "/api/v1/sales/"+sale+"/draw", "", nil)
	if r.status != http.StatusOK {
		return false
	}
	seed, _ := r.json(s.t)["seed"].(string)
	return seed != ""
}

// drawTaskQueue is the task queue the sale's draw runs on.
func (s *system) drawTaskQueue(sale string) string {
	s.t.Helper()
	d, err := s.temporal.DescribeWorkflowExecution(context.Background(), "draw-"+sale, "")
	require.NoError(s.t, err)
	return d.ExecutionConfig.GetTaskQueue().GetName()
}

type lobbyMe struct {
	Status   string `json:"status"`
	Entry    string `json:"entry"`
	Rank     int    `json:"rank"`
	OrderID  string `json:"order_id"`
	Position int64  `json:"position"`
}

func (s *system) lobbyMe(sale, user string) (int, lobbyMe) {
	s.t.Helper()
	r := s.mustDo("GET", "/api/v1/sales/"+sale+"/lobby/me", s.token(user, false), nil)
	var me lobbyMe
	if r.status == http.StatusOK {
		require.NoError(s.t, json.Unmarshal(r.body, &me))
	}
	return r.status, me
}

// The whole fair start: the commitment shown while the lobby is open,
// entries (a repeat answers the same entry), claims held back before and
// during the draw, the draw at starts_at ranking every entry by
// SHA-256(seed ‖ entry), ranks 1..stock admitted as claims are (payable
// orders), the next on the waitlist in rank order up to its bound, the
// rest lost; the seed published and checkable; claims as usual after.
// On 2 stock segments, so each admission lands in its buyer's segment.
func TestLobby_DrawAdmitsRanksOneToStockAndQueuesTheRest(t *testing.T) {
	s := startSystem(t, systemOptions{configure: func(c *app.Config) { c.WaitlistMax = 2 }})
	const stock, entrants = 3, 8
	sale := s.createLobbySale(stock, 4*time.Second, time.Minute, 2)
	require.Equal(t, seckill.DefaultDrawTaskQueue, s.drawTaskQueue(sale), "the draw runs apart from the sagas its admissions start")

	r := s.mustDo("GET", "/api/v1/sales/"+sale, "", nil)
	var view seckill.SaleJSON
	require.NoError(t, json.Unmarshal(r.body, &view))
	require.Equal(t, seckill.StateLobby, view.State)
	require.NotNil(t, view.Draw, "the commitment is shown from the lobby's opening: %s", r.body)
	commitment := view.Draw.Commitment

	entries := map[string]string{} // user -> entry
	for i := range entrants {
		user := "entrant-" + strconv.Itoa(i)
		r := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token(user, false), nil)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		entries[user] = r.json(t)["entry"].(string)
		again := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token(user, false), nil)
		require.Equal(t, http.StatusOK, again.status, "entering again")
		require.Equal(t, entries[user], again.json(t)["entry"])
		status, me := s.lobbyMe(sale, user)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "ENTERED", me.Status)
	}
	status, _ := s.lobbyMe(sale, "never-entered")
	require.Equal(t, http.StatusNotFound, status)
	early := s.claim(sale, "early-bird")
	require.Equal(t, http.StatusConflict, early.status)
	require.Equal(t, "SALE_NOT_STARTED", early.json(t)["code"])

	// The draw runs at starts_at; claims wait for it.
	var d struct {
		Commitment  string `json:"commitment"`
		Seed        string `json:"seed"`
		EntriesRoot string `json:"entries_root"`
		Beacon      struct {
			ChainHash  string `json:"chain_hash"`
			Round      uint64 `json:"round"`
			Signature  string `json:"signature"`
			Randomness string `json:"randomness"`
		} `json:"beacon"`
		Entries  int `json:"entries"`
		Admitted int `json:"admitted"`
	}
	require.Eventually(t, func() bool {
		r := s.mustDo("GET", "/api/v1/sales/"+sale+"/draw", "", nil)
		if r.status != http.StatusOK {
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
			require.Equal(t, "DRAW_IN_PROGRESS", r.json(t)["code"])
			require.NotEmpty(t, r.header.Get("Retry-After"))
			return false
		}
		require.NoError(t, json.Unmarshal(r.body, &d))
		return d.Seed != "" // before: the committed entries, waiting for the beacon round
	}, time.Minute, 100*time.Millisecond, "the draw never finished")
	require.Equal(t, commitment, d.Commitment)
	require.Equal(t, entrants, d.Entries)
	require.Equal(t, stock, d.Admitted)
	seed, err := draw.ParseSeed(d.Seed)
	require.NoError(t, err)
	require.Equal(t, commitment, draw.Commitment(seed), "the seed is the one committed to")
	// seckill dev's own beacon: the development chain's round, verified;
	// the ranks are those of SHA-256(seed ‖ randomness ‖ entries_root).
	require.Equal(t, beacon.Dev.Hash, d.Beacon.ChainHash)
	sig, err := hex.DecodeString(d.Beacon.Signature)
	require.NoError(t, err)
	require.NoError(t, beacon.Dev.Verify(d.Beacon.Round, sig))
	root, err := hex.DecodeString(d.EntriesRoot)
	require.NoError(t, err)
	randomness := beacon.Randomness(sig)
	require.Equal(t, hex.EncodeToString(randomness[:]), d.Beacon.Randomness)
	seed = draw.BeaconSeed(seed, randomness[:], root)
	recorded, err := s.store.DrawOf(context.Background(), mustInt(t, sale))
	require.NoError(t, err)
	sold, err := s.store.Sale(context.Background(), mustInt(t, sale))
	require.NoError(t, err)
	t.Logf("beacon round %d due %s after starts_at; its randomness used %s after starts_at (%s after the round's time)",
		d.Beacon.Round, recorded.Beacon.RoundAt.Sub(sold.StartsAt), recorded.BeaconAt.Sub(sold.StartsAt), recorded.BeaconAt.Sub(recorded.Beacon.RoundAt))
	require.False(t, recorded.BeaconAt.Before(recorded.Beacon.RoundAt), "no round is read before its time")

	// Every rank, recomputed from the published seed and entries.
	r = s.mustDo("GET", "/api/v1/sales/"+sale+"/draw/entries", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	lines := strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n")
	require.Len(t, lines, entrants)
	var published [][]byte
	for _, l := range lines {
		f := strings.Split(l, " ")
		require.Equal(t, []string{"default", "1"}, f[1:], "`<entry> <sku> <quantity>`: %q", l)
		e, err := draw.ParseEntry(f[0])
		require.NoError(t, err)
		published = append(published, e)
	}
	rankOf := map[string]int{}
	for _, rk := range draw.Rank(seed, published) {
		rankOf[hex.EncodeToString(rk.Entry)] = rk.Rank
	}
	waiting := 0
	for user, entry := range entries {
		rank := rankOf[entry]
		require.NotZero(t, rank, "%s's entry is published", user)
		status, me := s.lobbyMe(sale, user)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, rank, me.Rank, "%s's rank", user)
		switch {
		case rank <= stock:
			require.Equal(t, "WON", me.Status, "rank %d", rank)
			o := s.waitOrder(me.OrderID, user, seckill.StatusAwaitingPayment, 30*time.Second)
			require.Equal(t, sale, o.SaleID)
		case rank <= stock+2:
			require.Equal(t, "WAITING", me.Status, "rank %d", rank)
			require.Equal(t, int64(rank-stock), me.Position, "the waitlist is in rank order")
			waiting++
		default:
			require.Equal(t, "LOST", me.Status, "rank %d, past the waitlist's bound", rank)
		}
	}
	require.Equal(t, 2, waiting)

	// The draw's orders, as an admin reads them: ranks 1..stock.
	r = s.mustDo("GET", "/api/v1/sales/"+sale+"/draw/orders", s.token("admin", true), nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var listed struct {
		Orders []struct {
			OrderID string `json:"order_id"`
			Entry   string `json:"entry"`
		} `json:"orders"`
	}
	require.NoError(t, json.Unmarshal(r.body, &listed))
	require.Len(t, listed.Orders, stock)
	for i, o := range listed.Orders {
		require.Equal(t, i+1, rankOf[o.Entry], "orders admitted in rank order")
	}

	// After the draw: claims as usual (the units are gone: SOLD_OUT, or
	// a place on the waitlist behind the draw's).
	late := s.claim(sale, "late-buyer")
	require.Equal(t, http.StatusConflict, late.status, "%s", late.body)
	require.Equal(t, "SOLD_OUT", late.json(t)["code"])
	lobby := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token("late-buyer", false), nil)
	require.Equal(t, http.StatusConflict, lobby.status)
	require.Equal(t, "LOBBY_CLOSED", lobby.json(t)["code"])
	r = s.mustDo("GET", "/api/v1/sales/"+sale, "", nil)
	require.NoError(t, json.Unmarshal(r.body, &view))
	require.Equal(t, seckill.StateSoldOut, view.State)
	s.requireAudit(sale)
}

// A lobby with fewer entries than units: every entrant wins, and the
// units left are open to claims after the draw.
func TestLobby_UnitsLeftAfterTheDrawAreOpenToClaims(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createLobbySale(5, 3*time.Second, time.Minute, 1)
	for i := range 2 {
		r := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token(fmt.Sprintf("few-%d", i), false), nil)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	require.Eventually(t, func() bool {
		return s.drawDone(sale)
	}, time.Minute, 100*time.Millisecond)
	for i := range 2 {
		status, me := s.lobbyMe(sale, fmt.Sprintf("few-%d", i))
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "WON", me.Status)
	}
	r := s.claim(sale, "after-the-draw")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	s.requireAudit(sale)
}

// The fair start in a real browser, with a waitlist of one place: two
// shoppers enter the draw of a one-unit sale from its page before the
// start, a third by the API. The draw gives the unit to one (the page
// shows the won order, payable), puts the next first on the waitlist (the
// place in line) and leaves the third LOST: the line is full, so their page
// offers no "Join the waitlist" and says why. Every page then shows the
// published seed and how to verify the draw, no longer the promise made
// before it. When the waiting shopper leaves the line, the lost one is
// offered the place and takes it.
func TestShopper_LobbyDrawWonWaitingAndLostInBrowser(t *testing.T) {
	s := startSystem(t, systemOptions{configure: func(c *app.Config) { c.WaitlistMax = 1 }})
	shop := pages(t, s) // the page's requests checked against the contract
	sale := s.createLobbySale(1, 12*time.Second, 2*time.Minute, 1)
	shoppers := []string{"lobby-ann", "lobby-bob"}
	tabs := map[string]context.Context{}
	for _, name := range shoppers {
		ctx := browser(t)
		tabs[name] = ctx
		do(t, ctx, name+" opens the sale and signs in",
			chromedp.Navigate(shop+"/sales/"+sale),
			chromedp.WaitVisible("#signin-button"),
			chromedp.SetValue("#signin-name", name),
			chromedp.Click("#signin-button"),
			chromedp.WaitVisible("#who-user"),
			chromedp.WaitVisible("#enter"),
		)
		require.Contains(t, text(t, ctx, "#lobby-status"), "Enter before the start")
		require.Regexp(t, `^[0-9a-f]{64}$`, text(t, ctx, "#lobby-commitment"))
		require.Contains(t, text(t, ctx, "#claim-why"), "starts with a draw")
		if name == shoppers[0] {
			screenshot(t, ctx, "lobby-open.png")
		}
		do(t, ctx, name+" enters the draw", chromedp.Click("#enter"), chromedp.WaitNotVisible("#enter"))
		require.Contains(t, text(t, ctx, "#lobby-status"), "You are in the draw")
		if name == shoppers[0] {
			screenshot(t, ctx, "lobby-entered.png")
		}
	}
	r := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token("lobby-cy", false), nil)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	shoppers = append(shoppers, "lobby-cy")

	var published struct {
		Seed string `json:"seed"`
	}
	require.Eventually(t, func() bool {
		r = s.mustDo("GET", "/api/v1/sales/"+sale+"/draw", "", nil)
		return s.drawDone(sale)
	}, time.Minute, 100*time.Millisecond, "the draw is published")
	r = s.mustDo("GET", "/api/v1/sales/"+sale+"/draw", "", nil)
	require.NoError(t, json.Unmarshal(r.body, &published))
	ctx := browser(t)
	tabs["lobby-cy"] = ctx
	do(t, ctx, "lobby-cy opens the sale after the draw and signs in",
		chromedp.Navigate(shop+"/sales/"+sale),
		chromedp.WaitVisible("#signin-button"),
		chromedp.SetValue("#signin-name", "lobby-cy"),
		chromedp.Click("#signin-button"),
		chromedp.WaitVisible("#who-user"),
	)

	outcomes := map[string]string{}
	for _, name := range shoppers {
		ctx := tabs[name]
		var status string
		require.Eventually(t, func() bool {
			status = text(t, ctx, "#lobby-status")
			return strings.HasPrefix(status, "You won") || strings.HasPrefix(status, "The draw put you on the waitlist") ||
				strings.HasPrefix(status, "Not this time")
		}, time.Minute, 200*time.Millisecond, "%s's page never showed the draw's result", name)
		switch {
		case strings.HasPrefix(status, "You won"):
			outcomes["won"] = name
			do(t, ctx, "the won order is shown, payable",
				chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
				chromedp.WaitVisible("#payby-countdown"))
			require.Equal(t, "Reserved for you: waiting for payment", text(t, ctx, "#order-status"))
			screenshot(t, ctx, "lobby-draw-won.png")
		case strings.HasPrefix(status, "Not this time"):
			outcomes["lost"] = name
			// The line holds its one place: a join would be WAITLIST_FULL,
			// so the page offers none, and says why.
			require.Eventually(t, func() bool {
				return strings.HasPrefix(text(t, ctx, "#wait-status"), "The waitlist is full: it holds 1 buyer,")
			}, 10*time.Second, 200*time.Millisecond, "the lost shopper is told the waitlist is full, got %q", text(t, ctx, "#wait-status"))
			require.True(t, hidden(t, ctx, "#join"), "no Join the waitlist while the line is full")
			screenshot(t, ctx, "lobby-draw-lost-full.png")
		default:
			outcomes["waiting"] = name
			require.Contains(t, status, "you are next in line")
			screenshot(t, ctx, "lobby-draw-waiting.png")
		}
		// After the draw: the seed is out, and how to check it.
		proof := text(t, ctx, "#lobby-proof")
		require.NotContains(t, proof, "Before it opens", "%s sees the before-the-draw wording after the draw", name)
		require.Contains(t, proof, "seed is published")
		require.Contains(t, proof, "seckill draw verify --sale "+sale)
		require.Equal(t, published.Seed, text(t, ctx, "#draw-seed"))
	}
	require.Len(t, outcomes, 3, "one shopper won, one waits, one lost: %v", outcomes)
	href, err := chromedp.Run(tabs[outcomes["won"]], chromedp.AttributeValue("#verify-link", "href"))
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(href.Value, "/api/v1/sales/"+sale+"/draw"), href.Value)

	// A place opens: the waiting shopper leaves the line (their page says
	// so), and the lost one is offered the place and takes it.
	waiter, lost := tabs[outcomes["waiting"]], tabs[outcomes["lost"]]
	do(t, waiter, "the waiting shopper leaves the line",
		chromedp.WaitVisible("#leave"), chromedp.Click("#leave"), chromedp.WaitNotVisible("#leave"))
	require.Eventually(t, func() bool {
		return strings.Contains(text(t, waiter, "#lobby-status"), "you left it")
	}, 10*time.Second, 200*time.Millisecond, "got %q", text(t, waiter, "#lobby-status"))
	do(t, lost, "the lost shopper joins the line",
		chromedp.WaitVisible("#join"), chromedp.Click("#join"), chromedp.WaitVisible("#leave"))
	require.Equal(t, "You are next in line.", text(t, lost, "#wait-status"))
	screenshot(t, lost, "lobby-draw-lost-joined.png")
	s.requireAudit(sale)
}

// A draw an operator terminated (or that failed) before it was done is
// started again by the next reconciliation pass, and the sale still gets
// its draw; a draw that completed is never run again. Both runs are on
// the draw task queue configured (TEMPORAL_DRAW_TASK_QUEUE), the API's
// and reconciliation's, and the worker runs them there.
func TestLobby_ATerminatedDrawIsStartedAgain(t *testing.T) {
	const queue = "lobby-draws"
	s := startSystem(t, systemOptions{configure: func(c *app.Config) { c.ReconcileEvery, c.DrawTaskQueue = time.Second, queue }})
	sale := s.createLobbySale(1, 15*time.Second, time.Minute, 1)
	r := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token("patient", false), nil)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	ctx := t.Context()
	id := "draw-" + sale
	first, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, queue, first.ExecutionConfig.GetTaskQueue().GetName(), "the API's start")
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, id, "", "operator mistake"))
	require.Eventually(t, func() bool {
		d, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.WorkflowExecutionInfo.Execution.RunId != first.WorkflowExecutionInfo.Execution.RunId
	}, 30*time.Second, 200*time.Millisecond, "the terminated draw was never started again")
	require.Equal(t, queue, s.drawTaskQueue(sale), "reconciliation's start")
	require.Eventually(t, func() bool {
		return s.drawDone(sale)
	}, time.Minute, 200*time.Millisecond, "the sale never got its draw")
	status, me := s.lobbyMe(sale, "patient")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "WON", me.Status)
}

// A draw an earlier release started runs on the sagas' task queue, and
// its workflow and activity tasks stay there: the worker still runs it
// to the end, beside the draws on their own queue.
func TestLobby_ADrawOnTheSagasTaskQueueStillRuns(t *testing.T) {
	// No reconciliation pass while the draw is replaced.
	s := startSystem(t, systemOptions{configure: func(c *app.Config) { c.ReconcileEvery = time.Hour }})
	sale := s.createLobbySale(1, 6*time.Second, time.Minute, 1)
	r := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token("early", false), nil)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	ctx := t.Context()
	id := "draw-" + sale
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, id, "", "replaced by an earlier release's draw"))
	saved, err := s.store.Sale(ctx, mustInt(t, sale))
	require.NoError(t, err)
	_, err = s.temporal.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID: id, TaskQueue: s.cfg.TaskQueue, WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
	}, seckill.SaleDrawWorkflow, seckill.DrawInput{SaleID: saved.ID, StartsAt: saved.StartsAt, WaitlistMax: s.cfg.WaitlistMax})
	require.NoError(t, err)
	require.Equal(t, seckill.DefaultTaskQueue, s.drawTaskQueue(sale))

	require.Eventually(t, func() bool {
		return s.drawDone(sale)
	}, time.Minute, 200*time.Millisecond, "the draw on the sagas' queue never ran")
	status, me := s.lobbyMe(sale, "early")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "WON", me.Status)
	s.waitOrder(me.OrderID, "early", seckill.StatusAwaitingPayment, 30*time.Second)
}

// The beacon is down when the draw's round is due (docs/API.md "A draw
// nobody can bias"): the entries are committed and published, the sale
// stays DRAWING (claims answered DRAW_IN_PROGRESS), the draw retried;
// once the beacon is back the draw completes with that round, and no
// other.
func TestLobby_DrawWaitsForABeaconThatIsDown(t *testing.T) {
	srv := beacon.NewServer(beacon.DevSigner())
	srv.SetDown(true)
	web := httptest.NewServer(srv)
	t.Cleanup(web.Close)
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.BeaconURLs, c.BeaconChain, c.BeaconLocal = []string{web.URL}, beacon.Dev, false
	}})
	sale := s.createLobbySale(1, 2*time.Second, time.Minute, 1)
	for _, u := range []string{"early", "late"} {
		r := s.mustDo("POST", "/api/v1/sales/"+sale+"/lobby", s.token(u, false), nil)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	id := mustInt(t, sale)
	d, err := s.store.DrawOf(context.Background(), id)
	require.NoError(t, err)
	round := d.Beacon.Round
	// Past the round's time, and a few retries later: still drawing.
	time.Sleep(time.Until(d.Beacon.RoundAt.Add(5 * time.Second)))
	d, err = s.store.DrawOf(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, seckill.DrawClosed, d.State, "nothing ranked while the beacon is down")
	require.NotNil(t, d.Tree)
	r := s.mustDo("GET", "/api/v1/sales/"+sale+"/draw", "", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NotContains(t, r.json(t), "seed")
	require.NotEmpty(t, r.json(t)["entries_root"])
	claim := s.claim(sale, "impatient")
	require.Equal(t, http.StatusConflict, claim.status, "%s", claim.body)
	require.Equal(t, "DRAW_IN_PROGRESS", claim.json(t)["code"])

	srv.SetDown(false)
	require.Eventually(t, func() bool { return s.drawDone(sale) }, time.Minute, 200*time.Millisecond, "the draw never finished once the beacon was back")
	d, err = s.store.DrawOf(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, round, d.Beacon.Round)
	require.Equal(t, beacon.DevSigner().Sign(round), d.BeaconSignature, "drawn with the round fixed at creation")
	t.Logf("round %d due %s; the beacon came back and its randomness was used %s after the round's time", round,
		d.Beacon.RoundAt.Format(time.RFC3339), d.BeaconAt.Sub(d.Beacon.RoundAt).Round(time.Millisecond))
	s.requireAudit(sale)
}
