package activities_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/draw"
)

// A draw nobody can bias (docs/API.md "A draw nobody can bias"): the
// ranks wait for the beacon round fixed when the sale was created, after
// the entries are committed, and depend on the round's randomness.

// publishedRound is a round of chain whose time has passed.
func publishedRound(chain beacon.Chain) *seckill.DrawBeacon {
	r := chain.FirstRoundAt(time.Now().Add(-time.Minute))
	return &seckill.DrawBeacon{Chain: chain.Hash, Round: r, RoundAt: chain.RoundTime(r)}
}

// beaconRig is a draw rig whose sale waits for a published round of the
// development chain, read from a development beacon the test can take
// down.
func beaconRig(t *testing.T, stock int64, entrants int) (*drawRig, *beacon.Server) {
	t.Helper()
	srv := beacon.NewServer(beacon.DevSigner())
	web := httptest.NewServer(srv)
	t.Cleanup(web.Close)
	return newDrawRigOf(t, stock, entrants, 1, publishedRound(beacon.Dev),
		activities.WithBeacon(beacon.NewClient([]string{web.URL}, nil), beacon.Dev)), srv
}

// The beacon is down when the draw wants its round: the lobby is closed
// and its entries committed (the root is out), nothing is ranked, and the
// draw fails to be retried; once the beacon is back the draw completes
// with that round, its ranks those of SHA-256(seed ‖ randomness ‖ root).
func TestRankDraw_WaitsForABeaconThatIsDownThenRanksWithItsRound(t *testing.T) {
	r, srv := beaconRig(t, 3, 10)
	srv.SetDown(true)
	_, err := r.env.ExecuteActivity(r.acts.RankDraw, r.in)
	require.Error(t, err)
	require.Contains(t, err.Error(), "waits for round")
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.DrawClosed, d.State, "nothing ranked without the round")
	require.NotNil(t, d.Tree, "the entries are committed before the round is asked for")
	require.Nil(t, d.BeaconSignature)
	e, err := r.st.LobbyEntryOf(t.Context(), r.sale.ID, "e0")
	require.NoError(t, err)
	require.Zero(t, e.Rank)
	committed := d.Tree

	srv.SetDown(false)
	r.rank(t)
	r.settleAll(t)
	d, err = r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.DrawDone, d.State)
	require.Equal(t, committed, d.Tree, "the committed root never changes")
	require.NoError(t, beacon.Dev.Verify(d.Beacon.Round, d.BeaconSignature))
	require.Equal(t, beacon.DevSigner().Sign(d.Beacon.Round), d.BeaconSignature, "the round fixed at creation, no other")

	tree, err := draw.UnmarshalTree(d.Tree)
	require.NoError(t, err)
	randomness := beacon.Randomness(d.BeaconSignature)
	seed := draw.BeaconSeed(d.Seed, randomness[:], tree.Root[:])
	requireRanks(t, r, seed, 10)
	r.requireRanksAdmitted(t, 3)
}

// requireRanks checks that the first n entrants hold the ranks of seed.
func requireRanks(t *testing.T, r *drawRig, seed []byte, n int) {
	t.Helper()
	entries := make([][]byte, n)
	byEntry := map[string]int{}
	for i := range n {
		e, err := r.st.LobbyEntryOf(t.Context(), r.sale.ID, fmt.Sprint("e", i))
		require.NoError(t, err)
		entries[i], byEntry[string(e.Entry)] = e.Entry, e.Rank
	}
	for _, rk := range draw.Rank(seed, entries) {
		require.Equal(t, rk.Rank, byEntry[string(rk.Entry)], "entry %x", rk.Entry)
	}
}

// forged answers a round signed by another key, or another round: the
// draw must never use it.
type forged struct {
	round     func(want uint64) uint64
	signer    *beacon.Signer
	fetchedAt int
}

func (f *forged) Fetch(_ context.Context, _ beacon.Chain, round uint64) (beacon.Round, error) {
	f.fetchedAt++
	r := f.round(round)
	return beacon.Round{Number: r, Signature: f.signer.Sign(r)}, nil
}

// A beacon answering a signature that is not the chain's, or another
// round's, is never used: nothing is recorded or ranked.
func TestRankDraw_NeverUsesASignatureThatDoesNotVerify(t *testing.T) {
	other, err := beacon.NewSigner()
	require.NoError(t, err)
	for name, f := range map[string]*forged{
		"another key":   {round: func(r uint64) uint64 { return r }, signer: other},
		"another round": {round: func(r uint64) uint64 { return r - 1 }, signer: beacon.DevSigner()},
	} {
		t.Run(name, func(t *testing.T) {
			r := newDrawRigOf(t, 3, 5, 1, publishedRound(beacon.Dev), activities.WithBeacon(f, beacon.Dev))
			_, err := r.env.ExecuteActivity(r.acts.RankDraw, r.in)
			require.Error(t, err)
			require.Equal(t, 1, f.fetchedAt)
			d, err := r.st.DrawOf(t.Context(), r.sale.ID)
			require.NoError(t, err)
			require.Nil(t, d.BeaconSignature, "a forged signature is never recorded")
			require.Equal(t, seckill.DrawClosed, d.State)
		})
	}
}

// A round whose time has not come is not asked for in vain forever: the
// error says it is not published yet, and nothing is ranked.
func TestRankDraw_ARoundNotYetPublishedRanksNothing(t *testing.T) {
	web := httptest.NewServer(beacon.NewServer(beacon.DevSigner()))
	t.Cleanup(web.Close)
	future := beacon.Dev.FirstRoundAt(time.Now().Add(time.Hour))
	r := newDrawRigOf(t, 3, 5, 1, &seckill.DrawBeacon{Chain: beacon.Dev.Hash, Round: future, RoundAt: beacon.Dev.RoundTime(future)},
		activities.WithBeacon(beacon.NewClient([]string{web.URL}, nil), beacon.Dev))
	_, err := r.env.ExecuteActivity(r.acts.RankDraw, r.in)
	require.Error(t, err)
	require.Contains(t, err.Error(), beacon.ErrNotYet.Error())
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.DrawClosed, d.State)
}

// A worker that reads no beacon (SECKILL_BEACON_URLS=none) never draws a
// sale whose draw waits for a round: it says why, and the draw waits.
func TestRankDraw_AWorkerWithoutABeaconDoesNotDrawASaleThatWaitsForOne(t *testing.T) {
	r := newDrawRigOf(t, 3, 5, 1, publishedRound(beacon.Dev))
	_, err := r.env.ExecuteActivity(r.acts.RankDraw, r.in)
	require.Error(t, err)
	require.Contains(t, err.Error(), "SECKILL_BEACON_URLS=none")
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.DrawClosed, d.State)
}

// CommitDraw closes the lobby and commits the entries once: its root is
// that of the sorted entry lines, a second call keeps it, and it answers
// the round's time for the workflow to sleep until.
func TestCommitDraw_CommitsTheEntriesOnce(t *testing.T) {
	r, _ := beaconRig(t, 3, 7)
	v, err := r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
	require.NoError(t, err)
	var c seckill.DrawCommit
	require.NoError(t, v.Get(&c))
	require.True(t, c.RoundAt.Equal(r.sale.DrawBeacon.RoundAt), "%s", c.RoundAt)
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	tree, err := draw.UnmarshalTree(d.Tree)
	require.NoError(t, err)
	listed, err := r.st.LobbyEntries(t.Context(), r.sale.ID, nil, 100)
	require.NoError(t, err)
	lines := make([][]byte, len(listed))
	for i, l := range listed {
		lines[i] = draw.Line(l.Entry, l.Item.OrDefault().SKU, l.Item.OrDefault().Quantity)
	}
	require.Equal(t, draw.Root(lines), tree.Root)
	require.Equal(t, uint64(7), tree.Size)

	_, _, err = r.st.Enter(t.Context(), r.sale.ID, "late", seckill.DefaultItem)
	require.True(t, errors.Is(err, seckill.ErrLobbyClosed), "%v", err)
	_, err = r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
	require.NoError(t, err)
	again, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, d.Tree, again.Tree)
}

// A worker configured for quicknet never uses a round of the development
// chain, whose key anyone can derive, though the round verifies.
func TestRankDraw_AWorkerTrustsOnlyItsChainAndQuicknet(t *testing.T) {
	web := httptest.NewServer(beacon.NewServer(beacon.DevSigner()))
	t.Cleanup(web.Close)
	r := newDrawRigOf(t, 3, 5, 1, publishedRound(beacon.Dev), activities.WithBeacon(beacon.NewClient([]string{web.URL}, nil)))
	_, err := r.env.ExecuteActivity(r.acts.RankDraw, r.in)
	require.Error(t, err)
	require.Contains(t, err.Error(), "does not trust")
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Nil(t, d.BeaconSignature)
	require.Equal(t, seckill.DrawClosed, d.State)
}

// An entry slipped into the table after the commit (an insider's, once
// the randomness is known) is never ranked: RankDraw ranks the committed
// entries or nothing.
func TestRankDraw_RanksNothingButTheCommittedEntries(t *testing.T) {
	r, _ := beaconRig(t, 3, 6)
	_, err := r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
	require.NoError(t, err)
	require.NoError(t, r.st.Gorm().Exec(`INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity) VALUES (?, 'insider', ?, 'default', 1)`,
		r.sale.ID, draw.NewEntry()).Error)
	_, err = r.env.ExecuteActivity(r.acts.RankDraw, r.in)
	require.Error(t, err)
	require.Contains(t, err.Error(), "not those committed")
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.DrawClosed, d.State, "nothing ranked")
}
