package api_test

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/testenv"
)

// A draw nobody can bias (docs/API.md "A draw nobody can bias"), as the
// API shows it: the round fixed when the sale is created, then, once the
// lobby closed, the entries' root and each entrant's inclusion proof.
func TestLobbyBeacon_TheRoundThenTheRootThenEachEntrantsProof(t *testing.T) {
	chain := beacon.Dev
	r := newHandlerRig(t, api.Config{Beacon: &chain})
	id := r.shoeLobby(t)
	path := "/api/v1/sales/" + strconv.FormatInt(id, 10)

	sale := r.do(t, "GET", path, "", false, nil)
	require.Equal(t, http.StatusOK, sale.status)
	startsAt, err := time.Parse(time.RFC3339, sale.body["starts_at"].(string))
	require.NoError(t, err)
	shown := sale.body["draw"].(map[string]any)["beacon"].(map[string]any)
	require.Equal(t, chain.Hash, shown["chain_hash"])
	round := chain.DrawRound(startsAt)
	require.Equal(t, float64(round), shown["round"])
	require.False(t, chain.RoundTime(round).Before(startsAt.Add(10*time.Second)), "at least 10 s after starts_at")
	require.True(t, chain.RoundTime(round-1).Before(startsAt.Add(10*time.Second)), "the first such round")

	// 2,100 entrants: three chunks of the tree, the last one partial.
	const n = 2100
	testenv.ForEachBuyer(n, 8, func(i int64) {
		_, _, err := r.st.Enter(t.Context(), id, "buyer-"+strconv.FormatInt(i-1, 10), seckill.Item{SKU: "eu-43", Quantity: 1})
		if err != nil {
			t.Error(err)
		}
	})
	a := r.do(t, "POST", lobbyPath(id), "alice", false, map[string]any{"sku": "eu-42", "quantity": 2})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)

	// Before the lobby closes: no root, no proof.
	d := r.do(t, "GET", path+"/draw", "", false, nil)
	require.Equal(t, http.StatusConflict, d.status)
	require.Equal(t, string(seckill.CodeDrawInProgress), d.code())
	me := r.do(t, "GET", path+"/lobby/me", "alice", false, nil)
	require.Equal(t, "ENTERED", me.body["status"])
	require.Nil(t, me.body["inclusion_proof"])

	// The draw closes the lobby and commits the entries (as CommitDraw).
	require.NoError(t, r.st.CloseLobby(t.Context(), id))
	b := draw.NewTreeBuilder()
	listed, err := r.st.LobbyEntries(t.Context(), id, nil, n+1)
	require.NoError(t, err)
	for _, l := range listed {
		require.NoError(t, b.Add(l.Entry, draw.Line(l.Entry, l.Item.SKU, l.Item.Quantity)))
	}
	tree := b.Tree()
	bin, err := tree.MarshalBinary()
	require.NoError(t, err)
	_, err = r.st.CommitEntries(t.Context(), id, bin)
	require.NoError(t, err)

	d = r.do(t, "GET", path+"/draw", "", false, nil)
	require.Equal(t, http.StatusOK, d.status, "%v", d.body)
	require.Equal(t, hex.EncodeToString(tree.Root[:]), d.body["entries_root"])
	require.Equal(t, float64(n+1), d.body["entries"])
	require.Equal(t, map[string]any{"chain_hash": chain.Hash, "round": float64(round)}, d.body["beacon"])
	require.NotContains(t, d.body, "seed", "the seed is secret until the draw is done")
	require.Equal(t, sale.body["draw"].(map[string]any)["commitment"], d.body["commitment"])
	committedAt, err := time.Parse(time.RFC3339Nano, d.body["committed_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), committedAt, time.Minute, "when the root was committed")

	root := tree.Root[:]
	for _, user := range []string{"alice", "buyer-0", "buyer-1023", "buyer-1024", "buyer-2047", "buyer-2099"} {
		me := r.do(t, "GET", path+"/lobby/me", user, false, nil)
		require.Equal(t, http.StatusOK, me.status, "%s: %v", user, me.body)
		p := me.body["inclusion_proof"].(map[string]any)
		require.Equal(t, float64(n+1), p["tree_size"])
		var audit [][]byte
		for _, h := range p["audit_path"].([]any) {
			b, err := hex.DecodeString(h.(string))
			require.NoError(t, err)
			audit = append(audit, b)
		}
		e, err := r.st.LobbyEntryOf(t.Context(), id, user)
		require.NoError(t, err)
		line := draw.Line(e.Entry, e.Item.SKU, e.Item.Quantity)
		index := uint64(p["leaf_index"].(float64))
		require.NoError(t, draw.VerifyInclusion(line, index, uint64(n+1), audit, root), user)
		require.Error(t, draw.VerifyInclusion(draw.Line(e.Entry, e.Item.SKU, e.Item.Quantity+1), index, uint64(n+1), audit, root),
			"%s: the proof is of the entry's own line", user)
	}
}

// A sale with a lobby must end after its draw can run: a minute past the
// beacon round at least, or it is refused, naming ends_at.
func TestLobbyBeacon_ASaleEndingBeforeItsDrawCanRunIsRefused(t *testing.T) {
	chain := beacon.Dev
	r := newHandlerRig(t, api.Config{Beacon: &chain})
	now := time.Now().UTC()
	starts := now.Add(time.Hour)
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "Too short", "currency": "eur", "price_cents": 100, "stock": 1,
		"lobby_opens_at": now.Format(time.RFC3339), "starts_at": starts.Format(time.RFC3339),
		"ends_at": starts.Add(30 * time.Second).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusBadRequest, a.status, "%v", a.body)
	require.Equal(t, string(seckill.CodeInvalidRequest), a.code())
	require.Contains(t, a.body["detail"], "ends_at:")
	a = r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "Long enough", "currency": "eur", "price_cents": 100, "stock": 1,
		"lobby_opens_at": now.Format(time.RFC3339), "starts_at": starts.Format(time.RFC3339),
		"ends_at": starts.Add(2 * time.Minute).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
}
