package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
)

// The draw works in batches, so it never holds PostgreSQL or Redis in one
// long call: entries are read and ranked DrawReadBatch at a time, and each
// settle activity takes at most DrawSettleBatch ranks (entrants past the
// waitlist's bound are marked LOST DrawLostBatch at a time, without Redis).
const (
	DrawReadBatch   = 10_000
	DrawSettleBatch = 1_000
	DrawLostBatch   = 50_000
)

// DrawSettleSlice is the worker's settle slice (WithSettleSlice): a
// SettleDraw call settles batches for up to this long. A minute: with the
// sagas the admissions start queued in Temporal, each round trip of the
// draw's workflow waited 20 to 100 s in a million-entry draw here, so the
// fewer the better; a worker that dies mid-slice is noticed by its
// heartbeat (every entry), and the retry resumes at the recorded rank.
const DrawSettleSlice = time.Minute

// RankDraw closes the sale's lobby and commits its entries (CommitDraw),
// waits for the beacon round the ranks depend on (rankSeed), gives every
// entry its rank and decides
// which entries fit (draw.Fitter): in rank order, the entries whose
// variant still has their quantity, from each variant's stock fixed now
// (store.FreezeDrawStock). Its result is the same however often it runs
// (the seed and the stock are fixed, the lobby closed before it is read):
// a retry after a crash writes the same ranks and the same fits. With the
// entries committed and the round's signature recorded before the first
// rank is written, a retry ranks the same entries under the same seed.
func (a *Activities) RankDraw(ctx context.Context, in seckill.DrawInput) (seckill.DrawProgress, error) {
	// Reading, checking and ranking a million entries takes seconds, the
	// beacon's fetch up to BeaconFetchTimeout: not a dead worker.
	defer heartbeatEvery(ctx, time.Second)()
	d, err := a.store.DrawOf(ctx, in.SaleID)
	if err != nil {
		return seckill.DrawProgress{}, drawRefusal(in.SaleID, err)
	}
	switch d.State {
	case seckill.DrawDone:
		return seckill.DrawProgress{Entries: d.Entries, NextRank: d.Entries + 1, Done: true}, nil
	case seckill.DrawRanked:
		return seckill.DrawProgress{Entries: d.Entries, NextRank: d.NextRank}, nil
	}
	tree, err := a.commit(ctx, d)
	if err != nil {
		return seckill.DrawProgress{}, err
	}
	seed, err := a.rankSeed(ctx, d, tree)
	if err != nil {
		return seckill.DrawProgress{}, err
	}
	stock, err := a.store.FreezeDrawStock(ctx, in.SaleID)
	if err != nil {
		return seckill.DrawProgress{}, err
	}
	read, lines, err := a.readLobby(ctx, in.SaleID)
	if err != nil {
		return seckill.DrawProgress{}, err
	}
	// What is ranked is what was committed, or nothing is ranked.
	if read.Root != tree.Root || read.Size != tree.Size {
		return seckill.DrawProgress{}, fmt.Errorf("the draw of sale %d: its entries (%d, root %x) are not those committed (%d, root %x): nothing is ranked",
			in.SaleID, read.Size, read.Root, tree.Size, tree.Root)
	}
	// The rank order as indexes into lines (4 bytes an entry), and only
	// the ranks written now as draw.Ranked: the worker's memory is the
	// lines and, while their keys are sorted, 36 bytes an entry.
	order := draw.RankOrder(seed, len(lines), func(i int) []byte { return lines[i].Entry })
	fitter := draw.NewFitter(stock)
	fits := make([]bool, len(order))
	// Ranks through the last entry that fits (and at least the first
	// settle batch's) are written now, so the winners are admitted at
	// once; the rest, none of which fits, when the draw reaches them
	// (SettleDraw, store.RankRest), each row written once, with its
	// outcome when past the waitlist's bound.
	through := min(len(order), DrawSettleBatch)
	for r, i := range order {
		it := lines[i].Item.OrDefault()
		if fits[r] = fitter.Fit(it.SKU, it.Quantity); fits[r] {
			through = max(through, r+1)
		}
	}
	if !in.RanksWhenReached {
		through = len(order)
	}
	ranked := make([]draw.Ranked, through)
	for r := range ranked {
		ranked[r] = draw.Ranked{Entry: lines[order[r]].Entry, Rank: r + 1, Fits: fits[r]}
	}
	for i := 0; i < through; i += DrawReadBatch {
		if err := a.store.SetRanks(ctx, in.SaleID, ranked[i:min(i+DrawReadBatch, through)]); err != nil {
			return seckill.DrawProgress{}, err
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if err := a.store.MarkRanked(ctx, in.SaleID, len(order), through); err != nil {
		return seckill.DrawProgress{}, err
	}
	activity.GetLogger(ctx).Info("draw ranked", "saleID", in.SaleID, "entries", len(order), "rankedThrough", through)
	return seckill.DrawProgress{Entries: len(order), NextRank: 1}, nil
}

// SettleDraw settles the next ranks of a ranked draw, in rank order: an
// entrant that fits (RankDraw: their variant still has their quantity) is
// admitted exactly as a claim is (the same script, outbox, saga and
// pay_by), for their quantity of their variant; the others join their
// variant's waitlist in rank order up to its bound, the rest lose. Within
// a variant every entry that fits ranks before every one that does not
// (draw.Fitter), so the units a queued entrant's line holds for them are
// never ones an entry that fits needs. Admissions are one at a time, so
// order ids follow ranks; a retry after a crash finds the entrants it
// admitted already holding their orders (ALREADY_CLAIMED, ALREADY_WAITING)
// and gives no unit twice.
//
// With a settle slice (WithSettleSlice) one call settles batch after
// batch until the slice is over; a failure after a batch was settled
// returns what was settled (the next call meets the failure afresh).
func (a *Activities) SettleDraw(ctx context.Context, in seckill.DrawStep) (seckill.DrawProgress, error) {
	start := time.Now()
	var last *seckill.DrawProgress
	for {
		p, err := a.settleStep(ctx, in)
		switch {
		case err != nil && last != nil:
			activity.GetLogger(ctx).Warn("draw step failed after settling; the next step tries again", "saleID", in.SaleID, "error", err)
			return *last, nil
		case err != nil, p.Done, time.Since(start) >= a.settleSlice:
			return p, err
		}
		last = &p
		in.WaitlistFull, in.Ended = p.WaitlistFull, p.Ended
	}
}

// settleStep settles the next batch of ranks (SettleDraw).
func (a *Activities) settleStep(ctx context.Context, in seckill.DrawStep) (seckill.DrawProgress, error) {
	d, err := a.store.DrawOf(ctx, in.SaleID)
	if err != nil {
		return seckill.DrawProgress{}, drawRefusal(in.SaleID, err)
	}
	progress := seckill.DrawProgress{Entries: d.Entries, NextRank: d.NextRank, WaitlistFull: in.WaitlistFull, Ended: in.Ended}
	switch {
	case d.State == seckill.DrawDone:
		progress.Done = true
		return progress, nil
	case d.State != seckill.DrawRanked:
		return progress, fmt.Errorf("the draw of sale %d is %s, not ranked", in.SaleID, d.State)
	case d.NextRank > d.Entries:
		progress.Done = true
		return progress, nil
	}
	if d.NextRank > d.RankedThrough {
		return a.rankRest(ctx, d, in, progress)
	}
	sale, err := a.store.Sale(ctx, in.SaleID)
	if err != nil {
		return progress, drawRefusal(in.SaleID, err)
	}
	ended, err := a.ended(ctx, sale, in.Ended)
	if err != nil {
		return progress, err
	}
	if ended {
		// The sale ended before the draw got here (a draw held up for
		// long): nobody left is admitted or queued. Only the batch an
		// attempt cut off was settling can hold orders (admitted before
		// the end): at the first call that finds the sale ended, its
		// entrants keep them; after it, the rest lose without asking
		// Redis (which may have dropped the ended sale).
		if !in.Ended {
			a.redis.KnowSegments(sale.ID, sale.StockSegments)
			next, err := a.keepAdmitted(ctx, sale.ID, d.NextRank)
			if err != nil {
				return progress, err
			}
			progress.NextRank, progress.Done, progress.Ended = next, next > d.Entries, true
			return progress, nil
		}
		last := min(d.NextRank+DrawLostBatch-1, d.RankedThrough)
		if err := a.store.LoseRanks(ctx, in.SaleID, d.NextRank, last); err != nil {
			return progress, err
		}
		progress.NextRank, progress.Done = last+1, last >= d.Entries
		return progress, nil
	}
	if in.WaitlistFull {
		// Entrants that do not fit lose without asking Redis, in large
		// steps up to the next one that fits, which is still admitted.
		fit, err := a.store.NextFitRank(ctx, in.SaleID, d.NextRank)
		if err != nil {
			return progress, err
		}
		if fit != d.NextRank {
			last := min(d.NextRank+DrawLostBatch-1, d.RankedThrough)
			if fit != 0 {
				last = min(last, fit-1)
			}
			if err := a.store.LoseRanks(ctx, in.SaleID, d.NextRank, last); err != nil {
				return progress, err
			}
			progress.NextRank, progress.Done = last+1, last >= d.Entries
			return progress, nil
		}
	}
	batch, err := a.store.EntriesFrom(ctx, in.SaleID, d.NextRank, DrawSettleBatch)
	if err != nil {
		return progress, err
	}
	termsOf := seckill.TermsBySKU(*sale)
	held, err := a.heldOrders(ctx, sale.ID, batch)
	if err != nil {
		return progress, err
	}
	var placed []seckill.WaitlistEntry
	for _, e := range batch {
		switch {
		case held[e.UserID] != 0:
			// Admitted by an earlier attempt of this step, and its order
			// since closed (a live one Redis answers ALREADY_CLAIMED): the
			// winner keeps it, and is not admitted twice.
			e.Outcome, e.OrderID = seckill.EntryWon, held[e.UserID]
		case progress.Ended:
			// An earlier rank found the sale ended: no later rank is
			// admitted or queued, whatever the clock of another segment's
			// Redis says (a Cluster's nodes, a primary failed over to a
			// host behind), so the ranks admitted are 1..R-1 and the
			// published cut R holds.
			e.Outcome = seckill.EntryLost
		case e.Fits:
			err = a.admitDrawn(ctx, sale.ID, e, termsOf, &placed)
		default:
			err = a.queueDrawn(ctx, sale.ID, e, in.WaitlistMax, termsOf(e.Item.OrDefault().SKU), &progress, &placed)
		}
		if errors.Is(err, errSaleEnded) {
			progress.Ended, err = true, nil
		}
		if err != nil {
			return progress, err
		}
		activity.RecordHeartbeat(ctx, e.Rank)
	}
	// The places given, saved before the batch records anyone WAITING
	// (a retry finds them ALREADY_WAITING and saves them then).
	if err := a.store.SaveWaitlistEntries(ctx, sale.ID, placed); err != nil {
		return progress, err
	}
	next := d.NextRank + len(batch)
	if err := a.store.SettleEntries(ctx, in.SaleID, batch, next); err != nil {
		return progress, err
	}
	progress.NextRank, progress.Done = next, next > d.Entries || len(batch) == 0
	return progress, nil
}

// rankRest writes the ranks the draw has reached and not written (none
// of them fits: RankDraw wrote through the last that does): past the
// waitlist's bound, or once the sale has ended, every rank left, settled
// LOST in the same write; before, the next ranks the waitlist may take.
func (a *Activities) rankRest(ctx context.Context, d *seckill.Draw, in seckill.DrawStep, progress seckill.DrawProgress) (seckill.DrawProgress, error) {
	tree, err := draw.UnmarshalTree(d.Tree)
	if d.Tree == nil || err != nil {
		return progress, fmt.Errorf("the draw of sale %d has ranks to write and no committed entries: %v", d.SaleID, err)
	}
	seed, err := a.rankSeed(ctx, d, tree)
	if err != nil {
		return progress, err
	}
	lost := in.WaitlistFull || in.Ended
	upto := d.Entries
	if !lost {
		// Enough for the waitlist to fill and one batch more, in which
		// the first WAITLIST_FULL comes: the rest is then written once, as
		// LOST, not ranked first (a million-entry draw spent 7 s on a
		// second window and on marking it lost).
		upto = min(d.Entries, d.RankedThrough+max(DrawReadBatch, in.WaitlistMax+DrawSettleBatch))
	}
	// Half a minute for the LOST ranks of a million entries: not a dead
	// worker.
	stop := heartbeatEvery(ctx, time.Second)
	through, err := a.store.RankRest(ctx, d.SaleID, seed, upto, lost)
	stop()
	if err != nil {
		return progress, err
	}
	activity.GetLogger(ctx).Info("draw ranked the rest", "saleID", d.SaleID, "through", through, "lost", lost)
	if lost {
		progress.NextRank, progress.Done = through+1, through >= d.Entries
	}
	return progress, nil
}

// heldOrders are the orders the winners (the entries that fit) of batch
// already hold: an attempt of this step cut off before recording its
// batch admitted them.
func (a *Activities) heldOrders(ctx context.Context, saleID int64, batch []*seckill.LobbyEntry) (map[string]int64, error) {
	var winners []string
	for _, e := range batch {
		if e.Fits {
			winners = append(winners, e.UserID)
		}
	}
	return a.store.OrdersOfEach(ctx, saleID, winners)
}

// ended reports whether sale has ended on Redis' clock, the one its
// scripts decide by: a worker whose clock is behind Redis' would admit
// entrants Redis refuses, one ahead would lose entrants Redis still
// admits. Once a step found it ended (known), Redis is not asked again.
// Within a batch each admission's answer is Redis' own: a SALE_ENDED
// there comes after the buyer's held order (claim.lua), so an entrant an
// earlier attempt admitted keeps their order whenever the end falls.
func (a *Activities) ended(ctx context.Context, sale *seckill.Sale, known bool) (bool, error) {
	if known {
		return true, nil
	}
	now, err := a.redis.Now(ctx, sale.ID)
	if err != nil {
		return false, err
	}
	return !now.Before(sale.EndsAt), nil
}

// keepAdmitted settles, from rank from on, the batch an attempt cut off
// may have begun: each entrant holding an order of the sale (a claim in
// Redis, which may have dropped the ended sale, or an order row) keeps it,
// WON, or WAITING if it did not fit (served by the waitlist); the others
// lose. Then the draw goes on past that batch: next is the rank after it.
func (a *Activities) keepAdmitted(ctx context.Context, saleID int64, from int) (next int, err error) {
	batch, err := a.store.EntriesFrom(ctx, saleID, from, DrawSettleBatch)
	if err != nil {
		return from, err
	}
	for _, e := range batch {
		e.Outcome, e.OrderID = seckill.EntryLost, 0
		orderID, err := a.redis.ClaimOf(ctx, saleID, e.UserID)
		if err != nil {
			return from, err
		}
		if orderID == 0 {
			orders, err := a.store.OrdersOf(ctx, saleID, e.UserID)
			if err != nil {
				return from, err
			}
			if len(orders) > 0 {
				orderID = orders[0].ID
			}
		}
		if orderID == 0 {
			activity.RecordHeartbeat(ctx, e.Rank)
			continue
		}
		e.Outcome, e.OrderID = seckill.EntryWon, orderID
		if !e.Fits {
			e.Outcome = seckill.EntryWaiting // served by the waitlist
		}
		activity.RecordHeartbeat(ctx, e.Rank)
	}
	next = from + len(batch)
	return next, a.store.SettleEntries(ctx, saleID, batch, next)
}

// admitDrawn admits a winner as a claim, as order e.OrderID (fresh, so ids
// follow ranks); an entrant admitted by an earlier try keeps that order,
// live or since closed (the claim's DrawClaimKey replays it).
//
// A winner fits, so their units are theirs: a tentative
// SOLD_OUT (units in flight between the sale's segments, left there by a
// mover that stopped between take and give, perhaps an earlier attempt of
// this very step) is no reason to queue them. The draw lands those units
// at once (each step of a move is idempotent, so landing a live mover's
// move is safe) and asks again; units that still have not landed fail the
// step, which is retried until they have.
func (a *Activities) admitDrawn(ctx context.Context, saleID int64, e *seckill.LobbyEntry, termsOf func(sku string) seckill.Terms, placed *[]seckill.WaitlistEntry) error {
	terms := termsOf(e.Item.OrDefault().SKU)
	orderID, err := a.ids.Next()
	if err != nil {
		return err
	}
	res, err := a.drawPass.Claim(ctx, saleID, e.UserID, orderID, DrawClaimKey, terms, e.Item.OrDefault())
	if err == nil && short(res) && res.Tentative && !res.Owed {
		// Units landing may serve any variant's waiting buyers: each at
		// its variant's terms.
		if _, err := a.redis.FinishMoves(ctx, saleID, termsOf, 0, a.ids.Next); err != nil {
			return fmt.Errorf("land the units in flight for rank %d of sale %d: %w", e.Rank, saleID, err)
		}
		// A fresh id: a borrow names its move after the claim's order id.
		if orderID, err = a.ids.Next(); err != nil {
			return err
		}
		res, err = a.drawPass.Claim(ctx, saleID, e.UserID, orderID, DrawClaimKey, terms, e.Item.OrDefault())
	}
	if err != nil {
		return err
	}
	switch res.Outcome {
	case seckill.Admitted, seckill.AlreadyClaimed:
		e.Outcome, e.OrderID = seckill.EntryWon, res.OrderID
		return nil
	case seckill.SaleEnded: // holding no order: claim.lua tells a held one first
		e.Outcome = seckill.EntryLost
		return errSaleEnded
	case seckill.SoldOut, seckill.NotEnoughStock:
		if res.Tentative && !res.Owed {
			return fmt.Errorf("admit rank %d of sale %d: its units are still moving between segments", e.Rank, saleID)
		}
		// Not expected (nobody claims before the draw is done, and a winner
		// an earlier attempt admitted keeps that order): the entrant waits,
		// first in line, rather than lose a unit that comes back.
		var full bool
		return a.queueDrawnFull(ctx, saleID, e, 0, terms, &full, placed)
	}
	return fmt.Errorf("admit rank %d of sale %d: %s", e.Rank, saleID, res.Outcome)
}

// short reports whether a claim found too few units of its variant: none
// (SOLD_OUT) or fewer than its quantity (NOT_ENOUGH_STOCK).
func short(res seckill.ClaimResult) bool {
	return res.Outcome == seckill.SoldOut || res.Outcome == seckill.NotEnoughStock
}

// queueDrawn puts an entrant that does not fit on their variant's
// waitlist.
func (a *Activities) queueDrawn(ctx context.Context, saleID int64, e *seckill.LobbyEntry, bound int, terms seckill.Terms, p *seckill.DrawProgress, placed *[]seckill.WaitlistEntry) error {
	if p.WaitlistFull {
		e.Outcome = seckill.EntryLost
		return nil
	}
	return a.queueDrawnFull(ctx, saleID, e, bound, terms, &p.WaitlistFull, placed)
}

func (a *Activities) queueDrawnFull(ctx context.Context, saleID int64, e *seckill.LobbyEntry, bound int, terms seckill.Terms, full *bool, placed *[]seckill.WaitlistEntry) error {
	if bound <= 0 {
		bound = 1 << 30
	}
	orderID, err := a.ids.Next()
	if err != nil {
		return err
	}
	joinedAt := time.Now()
	res, err := a.drawPass.Join(ctx, saleID, e.UserID, e.Item.OrDefault(), bound, orderID, terms)
	if err != nil {
		return err
	}
	switch res.Outcome {
	case seckill.Waiting, seckill.AlreadyWaiting:
		e.Outcome = seckill.EntryWaiting
		// The place is saved as a join answered 201 is (docs/DESIGN.md
		// invariant 10): a line Redis loses is rebuilt with the draw's
		// entrants at their places, in rank order, ahead of later joins.
		// A retry of the step finds ALREADY_WAITING and saves it then.
		return a.keepPlace(ctx, saleID, e.UserID, joinedAt, placed)
	case seckill.Admitted, seckill.AlreadyClaimed:
		// A unit came back before this rank was queued (a winner cancelled
		// meanwhile): the waitlist serves it at once. It is not one of the
		// draw's K admissions, which the published draw lists; GET
		// /lobby/me shows its order.
		e.Outcome, e.OrderID = seckill.EntryWaiting, res.OrderID
	case seckill.WaitlistFull:
		e.Outcome, *full = seckill.EntryLost, true
	case seckill.SaleEnded:
		e.Outcome = seckill.EntryLost
		return errSaleEnded
	default:
		return fmt.Errorf("queue rank %d of sale %d: %s", e.Rank, saleID, res.Outcome)
	}
	return nil
}

// keepPlace adds to placed where the draw queued userID, with an order id
// of its own (the one a re-warm serves them with), for SettleDraw to save
// with its batch (store.SaveWaitlistEntries); nothing when
// the line served them since (they hold a claim). An entrant in no line
// who holds no claim was lost with Redis since the join (re-warmed from
// rows without theirs), or left at once: the step fails, and its retry
// queues them again (ALREADY_WAITING if they are in line after all), so
// nobody is recorded WAITING who waits nowhere (hostile review).
func (a *Activities) keepPlace(ctx context.Context, saleID int64, userID string, joinedAt time.Time, placed *[]seckill.WaitlistEntry) error {
	e, ok, err := a.drawPass.PlaceOf(ctx, saleID, userID)
	if err != nil {
		return err
	}
	if !ok {
		claim, err := a.redis.ClaimOf(ctx, saleID, userID)
		if err != nil {
			return err
		}
		if claim == 0 {
			return fmt.Errorf("queue %s in sale %d: they wait in no line and hold no claim (Redis lost the line since the join?); trying again", userID, saleID)
		}
		return nil
	}
	if e.OrderID, err = a.ids.Next(); err != nil {
		return err
	}
	e.JoinedAt = joinedAt
	*placed = append(*placed, e)
	return nil
}

// FinishDraw records the draw done (which publishes its seed), then opens
// the sale to claims and joins. In that order: a segment Redis lost and a
// re-warm reloads meanwhile is loaded held back only if the re-warm read
// the sale before it was done, and the re-warm opens it once it reads it
// done (warmup); a retry opens again. Idempotent.
func (a *Activities) FinishDraw(ctx context.Context, in seckill.DrawInput) error {
	if err := a.store.FinishDraw(ctx, in.SaleID); err != nil {
		return err
	}
	if err := a.redis.OpenClaims(ctx, in.SaleID, in.StartsAt); err != nil {
		return err
	}
	activity.GetLogger(ctx).Info("draw done", "saleID", in.SaleID)
	return nil
}

// DrawClaimKey is the Idempotency-Key of the draw's claims: a retried
// step's claim for an entrant an earlier attempt admitted answers that
// admission again (202 replayed, the same order id) even once the buyer
// has cancelled it and its unit is back, so nobody is admitted twice for
// one rank. It holds a space, which no buyer's Idempotency-Key can
// (printable ASCII without it, docs/API.md), so no claim of theirs shares
// its record.
const DrawClaimKey = "seckill draw"

// errSaleEnded: Redis refused an entrant because the sale has ended; the
// entrant is LOST, and so is every later rank (SettleDraw).
var errSaleEnded = errors.New("the sale has ended")

// drawRefusal makes a sale without a draw a non-retryable failure.
func drawRefusal(saleID int64, err error) error {
	if errors.Is(err, seckill.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sale %d has no draw", saleID), seckill.ErrTypeSaleNotFound, err)
	}
	return err
}
