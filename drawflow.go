package seckill

import (
	"strconv"
	"time"
)

// SaleDrawWorkflow is the workflow type of a sale's draw (docs/API.md
// "Fair start"): one per sale with a lobby, started when the sale is
// created.
const SaleDrawWorkflow = "SaleDraw"

// DrawWorkflowID is the workflow ID of sale id's draw.
func DrawWorkflowID(saleID int64) string { return "draw-" + strconv.FormatInt(saleID, 10) }

// DrawInput starts a SaleDraw. One struct, so fields can be added without
// breaking running histories.
type DrawInput struct {
	SaleID   int64
	StartsAt time.Time
	// WaitlistMax bounds the sale's waitlist: entrants ranked past the
	// units and past this many waiting buyers lose.
	WaitlistMax int
	// RanksWhenReached: RankDraw writes the ranks through the last entry
	// that fits and SettleDraw the rest when it reaches them (set by
	// saga.Client.StartDraw for draws on the draws' task queue). A draw
	// started before, on the sagas' queue, may have its steps run by a
	// worker of the release before, which settles only ranks that are
	// written: its RankDraw writes every rank.
	RanksWhenReached bool `json:",omitempty"`
}

// DrawCommit is what CommitDraw answers: when the beacon round the ranks
// wait for is published (zero: the draw waits for none).
type DrawCommit struct {
	RoundAt time.Time
}

// DrawStep is one call of the draw's settle activity: the draw's input
// and what the calls before it found.
type DrawStep struct {
	DrawInput
	// WaitlistFull: a join was refused as the waitlist was full, so every
	// entrant ranked after it loses without asking Redis.
	WaitlistFull bool
	// Ended: the sale had ended at an earlier call, which settled the
	// batch a cut-off attempt may have begun (its entrants keep their
	// orders), so every entrant after it loses without asking Redis.
	Ended bool
}

// DrawProgress is where a draw stands after an activity.
type DrawProgress struct {
	Entries  int  // entries in the lobby (once ranked)
	NextRank int  // the first rank not yet settled
	Done     bool // every rank is settled
	// WaitlistFull and Ended, as DrawStep's.
	WaitlistFull, Ended bool
}
