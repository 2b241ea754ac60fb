package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/draw"
)

// A draw nobody can bias (docs/API.md "Fair start", v4): when the lobby
// closes its entries are committed by their Merkle root, and the ranks
// wait for a beacon round published after that, so nobody, the operator
// included, knows the ranks before the entries are fixed.

// BeaconFetchTimeout bounds one attempt to read a round from every
// endpoint (the draw's activities heartbeat every 30 s).
const BeaconFetchTimeout = 20 * time.Second

// Beacon fetches a chain's round, its signature verified against the
// chain's key (beacon.Client). An error wrapping beacon.ErrNotYet: the
// round is not published yet.
type Beacon interface {
	Fetch(ctx context.Context, chain beacon.Chain, round uint64) (beacon.Round, error)
}

// WithBeacon makes the draw read the rounds it waits for from b. chains
// are the chains trusted besides quicknet: the development chain where
// the worker is configured with it (SECKILL_BEACON_CHAIN=dev), a test's
// own. A round of any other chain is never used, not even the
// development chain's when the worker is not configured with it: its key
// is public. Without it a
// draw that waits for a round cannot run: it stays DRAWING, retried, and
// the worker's gauge of late beacons raises the alert.
func WithBeacon(b Beacon, chains ...beacon.Chain) Option {
	return func(a *Activities) { a.beacon, a.chains = b, chains }
}

// chain is the trusted chain with that hash.
func (a *Activities) chain(hash string) (beacon.Chain, bool) {
	for _, c := range a.chains {
		if c.Hash == hash {
			return c, true
		}
	}
	if hash == beacon.Quicknet.Hash {
		return beacon.Quicknet, true
	}
	return beacon.Chain{}, false
}

// CommitDraw closes the sale's lobby, fixes each variant's units
// (store.FreezeDrawStock) and commits its entries: the tree of
// their lines (draw.Tree), whose root GET /draw publishes from now on and
// whose inclusion proofs GET /lobby/me gives. It answers when the beacon
// round the ranks wait for is published (zero: the draw waits for none),
// so the workflow sleeps until then instead of asking the beacon early.
// Idempotent: the tree first recorded stays.
func (a *Activities) CommitDraw(ctx context.Context, in seckill.DrawInput) (seckill.DrawCommit, error) {
	// The commit's heartbeat timeout is a few seconds (the entries must be
	// committed before the beacon round): a statement slower than that
	// (closing the lobby waits for the entries in flight) must not make
	// the attempt look dead. A worker that dies stops this with it.
	defer heartbeatEvery(ctx, time.Second)()
	d, err := a.store.DrawOf(ctx, in.SaleID)
	if err != nil {
		return seckill.DrawCommit{}, drawRefusal(in.SaleID, err)
	}
	if _, err := a.commit(ctx, d); err != nil {
		return seckill.DrawCommit{}, err
	}
	var out seckill.DrawCommit
	if d.Beacon != nil {
		out.RoundAt = d.Beacon.RoundAt
	}
	return out, nil
}

// commit closes d's lobby and records its tree, unless recorded: the tree
// recorded is returned.
func (a *Activities) commit(ctx context.Context, d *seckill.Draw) (*draw.Tree, error) {
	if d.Tree == nil {
		// Every entry answered 201 is in the table once the lobby is closed.
		if err := a.store.CloseLobby(ctx, d.SaleID); err != nil {
			return nil, err
		}
		// The units each variant draws are fixed now too, before anyone
		// knows the randomness (RankDraw reads the same).
		if _, err := a.store.FreezeDrawStock(ctx, d.SaleID); err != nil {
			return nil, err
		}
		t, _, err := a.readLobby(ctx, d.SaleID)
		if err != nil {
			return nil, err
		}
		bin, err := t.MarshalBinary()
		if err != nil {
			return nil, err
		}
		if d.Tree, err = a.store.CommitEntries(ctx, d.SaleID, bin); err != nil {
			return nil, err
		}
		// The tree first recorded is the one kept, whoever recorded it.
		kept, err := draw.UnmarshalTree(d.Tree)
		if err == nil {
			activity.GetLogger(ctx).Info("draw committed", "saleID", d.SaleID, "entries", kept.Size, "root", fmt.Sprintf("%x", kept.Root))
		}
		return kept, err
	}
	return draw.UnmarshalTree(d.Tree)
}

// readLobby reads every entry of the closed lobby, ascending by entry,
// and returns them with the tree of their lines: what CommitDraw commits
// and what RankDraw checks it ranks.
func (a *Activities) readLobby(ctx context.Context, saleID int64) (*draw.Tree, []seckill.EntryLine, error) {
	lobby, err := a.store.ClosedLobby(ctx, saleID)
	if err != nil {
		return nil, nil, err
	}
	activity.RecordHeartbeat(ctx, "read")
	b := draw.NewTreeBuilder()
	for i, e := range lobby {
		it := e.Item.OrDefault()
		if err := b.Add(e.Entry, draw.Line(e.Entry, it.SKU, it.Quantity)); err != nil {
			return nil, nil, fmt.Errorf("the entries of sale %d: %w", saleID, err)
		}
		if i%DrawReadBatch == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	return b.Tree(), lobby, nil
}

// rankSeed is the seed d's entries are ranked with: with a beacon,
// SHA-256(seed ‖ randomness ‖ entries_root) once round R is fetched and
// its signature verified (recorded before any rank, so every retry ranks
// alike); without one, the secret seed alone (v3). A round not yet
// published, a beacon that cannot be reached or a signature that does not
// verify is an error: the activity is retried, and the draw never runs
// with another round or without one.
func (a *Activities) rankSeed(ctx context.Context, d *seckill.Draw, tree *draw.Tree) ([]byte, error) {
	if d.Beacon == nil {
		return d.Seed, nil
	}
	sig := d.BeaconSignature
	if sig == nil && a.beacon == nil {
		return nil, fmt.Errorf("the draw of sale %d waits for round %d of chain %s, and this worker reads no beacon (SECKILL_BEACON_URLS=none)",
			d.SaleID, d.Beacon.Round, d.Beacon.Chain)
	}
	chain, ok := a.chain(d.Beacon.Chain)
	if !ok {
		return nil, fmt.Errorf("the draw of sale %d waits for chain %s, which this worker does not trust", d.SaleID, d.Beacon.Chain)
	}
	if sig == nil {
		// Bounded well within the activity's heartbeat timeout, however
		// many endpoints hang: the next attempt starts again.
		activity.RecordHeartbeat(ctx, "beacon")
		fctx, cancel := context.WithTimeout(ctx, BeaconFetchTimeout)
		r, err := a.beacon.Fetch(fctx, chain, d.Beacon.Round)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the draw of sale %d waits for round %d (due %s): %w", d.SaleID, d.Beacon.Round, d.Beacon.RoundAt.Format(time.RFC3339), err)
		}
		// Checked here too, whatever the fetcher did: only the round's
		// own signature is ever recorded.
		if r.Number != d.Beacon.Round {
			return nil, fmt.Errorf("the draw of sale %d waits for round %d, and the beacon answered round %d", d.SaleID, d.Beacon.Round, r.Number)
		}
		if err := chain.Verify(d.Beacon.Round, r.Signature); err != nil {
			return nil, fmt.Errorf("the draw of sale %d: round %d: %w", d.SaleID, d.Beacon.Round, err)
		}
		if sig, err = a.store.SetBeaconSignature(ctx, d.SaleID, r.Signature); err != nil {
			return nil, err
		}
	}
	// A signature recorded is used only if it is the round's.
	if err := chain.Verify(d.Beacon.Round, sig); err != nil {
		return nil, fmt.Errorf("the draw of sale %d: the recorded round %d: %w", d.SaleID, d.Beacon.Round, err)
	}
	randomness := beacon.Randomness(sig)
	return draw.BeaconSeed(d.Seed, randomness[:], tree.Root[:]), nil
}

// heartbeatEvery records the activity's heartbeat every period until the
// returned function is called.
func heartbeatEvery(ctx context.Context, period time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
