package audit_test

import (
	"testing"
	"time"

	"github.com/cloudflare/circl/ecc/bls12381"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// A draw that waits for a beacon round (docs/API.md "A draw nobody can
// bias") ranks nobody without its committed entries and the round's
// signature, and that signature verifies against the pinned chain's key:
// the audit fails each way round (invariant 9), and passes the draw that
// keeps its word.
func TestRun_FailsADrawWhoseBeaconDoesNotVerify(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	sale := testenv.LobbySale(t, st, 2, "ann", "bob")
	testenv.Warm(t, rs, sale, 2)
	round := beacon.Dev.FirstRoundAt(sale.StartsAt)
	exec(t, st, `UPDATE sales SET draw_beacon_chain = ?, draw_beacon_round = ?, draw_beacon_round_at = ? WHERE id = ?`,
		beacon.Dev.Hash, round, beacon.Dev.RoundTime(round), sale.ID)
	good := beacon.DevSigner().Sign(round)
	t.Run("entries committed after the round's time", func(t *testing.T) {
		exec(t, st, `UPDATE sales SET draw_state = ?, draw_entries_tree = ?, draw_beacon_signature = ?, draw_committed_at = draw_beacon_round_at + interval '1 second' WHERE id = ?`,
			seckill.DrawRanked, []byte{1}, good, sale.ID)
		rep := audited(t, st, rs, sale)
		require.Contains(t, failed(rep), 9, "%s", rep)
		require.Contains(t, rep.String(), "could have known its randomness")
		exec(t, st, `UPDATE sales SET draw_committed_at = draw_beacon_round_at - interval '9 seconds' WHERE id = ?`, sale.ID)
		require.NotContains(t, failed(audited(t, st, rs, sale)), 9)
	})
	for name, tc := range map[string]struct {
		state     string
		tree      []byte
		signature []byte
		violation string // "": none
	}{
		"ranked with its round":              {seckill.DrawRanked, []byte{1}, good, ""},
		"waiting for its round":              {seckill.DrawClosed, []byte{1}, nil, ""},
		"ranked without its round":           {seckill.DrawRanked, []byte{1}, nil, "without beacon round"},
		"ranked without committing entries":  {seckill.DrawRanked, nil, good, "without committing them"},
		"a signature of another round":       {seckill.DrawRanked, []byte{1}, beacon.DevSigner().Sign(round + 1), "does not verify"},
		"the round's signature uncompressed": {seckill.DrawDone, []byte{1}, uncompressed(t, good), "does not verify"},
		"a malformed signature":              {seckill.DrawDone, []byte{1}, []byte("not a signature"), "does not verify"},
	} {
		t.Run(name, func(t *testing.T) {
			var committedAt *time.Time // committed at the lobby's close, 10 s before the round
			if tc.tree != nil {
				at := beacon.Dev.RoundTime(round).Add(-10 * time.Second)
				committedAt = &at
			}
			exec(t, st, `UPDATE sales SET draw_state = ?, draw_entries_tree = ?, draw_committed_at = ?, draw_beacon_signature = ? WHERE id = ?`,
				tc.state, tc.tree, committedAt, tc.signature, sale.ID)
			rep := audited(t, st, rs, sale)
			if tc.violation == "" {
				require.NotContains(t, failed(rep), 9, "%s", rep)
				return
			}
			require.Contains(t, failed(rep), 9, "%s", rep)
			require.Contains(t, rep.String(), tc.violation)
		})
	}
}

// uncompressed is sig's point of G1 in its 96-byte form.
func uncompressed(t *testing.T, sig []byte) []byte {
	var g bls12381.G1
	require.NoError(t, g.SetBytes(sig))
	return g.Bytes()
}
