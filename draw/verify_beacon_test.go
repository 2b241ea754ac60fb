package draw_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cloudflare/circl/ecc/bls12381"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/draw"
)

// A draw that waits for a beacon round (docs/API.md "A draw nobody can
// bias"), published as the API publishes it.
type beaconDraw struct {
	seed     []byte
	entries  []string // sorted
	stock    int64
	startsAt time.Time
	round    uint64
	sig      []byte
	root     [32]byte
}

func newBeaconDraw(t *testing.T, n int, stock int64, signer *beacon.Signer) *beaconDraw {
	t.Helper()
	b := &beaconDraw{seed: draw.NewSeed(), stock: stock, startsAt: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	for range n {
		b.entries = append(b.entries, hex.EncodeToString(draw.NewEntry()))
	}
	slices.Sort(b.entries)
	chain := signer.Chain()
	b.round = chain.DrawRound(b.startsAt)
	b.sig = signer.Sign(b.round)
	b.root = draw.Root(lineBytes(b.entries))
	return b
}

func lineBytes(entries []string) [][]byte {
	out := make([][]byte, len(entries))
	for i, l := range defaults(entries) {
		out[i] = []byte(l)
	}
	return out
}

// rankSeed is the seed the ranks use: SHA-256(seed ‖ randomness ‖ root).
func (b *beaconDraw) rankSeed() []byte {
	r := beacon.Randomness(b.sig)
	return draw.BeaconSeed(b.seed, r[:], b.root[:])
}

func (b *beaconDraw) get(chain beacon.Chain) draw.Published {
	raw := make([][]byte, len(b.entries))
	for i, e := range b.entries {
		raw[i], _ = hex.DecodeString(e)
	}
	var orders []draw.Order
	for i, r := range draw.Rank(b.rankSeed(), raw)[:min(int(b.stock), len(raw))] {
		orders = append(orders, draw.Order{ID: strconv.Itoa(500 + i), Entry: hex.EncodeToString(r.Entry), Rank: int64(r.Rank)})
	}
	randomness := beacon.Randomness(b.sig)
	commit := draw.Commitment(b.seed)
	committed := b.startsAt // the lobby closes at starts_at, 10 s or more before the round
	pb := &draw.PublishedBeacon{ChainHash: chain.Hash, Round: b.round, Signature: hex.EncodeToString(b.sig), Randomness: hex.EncodeToString(randomness[:])}
	return draw.Published{
		SaleID: "7", SaleCommitment: commit, Commitment: commit, Seed: hex.EncodeToString(b.seed),
		DeclaredEntries: int64(len(b.entries)), Admitted: min(b.stock, int64(len(b.entries))),
		Entries: draw.EntriesOf(defaults(b.entries)...), Stock: b.stock, Orders: orders,
		EntriesRoot: hex.EncodeToString(b.root[:]), CommittedAt: &committed, Beacon: pb,
		SaleBeacon: &draw.PublishedBeacon{ChainHash: chain.Hash, Round: b.round}, SaleStartsAt: b.startsAt,
		DevChainOK: chain.Dev,
	}
}

// A draw from the development chain, whose key anyone can derive, fails
// unless the verifier accepts that chain (seckill dev's), and is named as
// such either way.
func TestVerifyBeacon_AGoodDrawFromTheDevelopmentChainChecksOutOnlyWhenAcceptedAndSaysSo(t *testing.T) {
	b := newBeaconDraw(t, 40, 7, beacon.DevSigner())
	p := b.get(beacon.Dev)
	p.DevChainOK = false
	refused := draw.Verify(p)
	require.Equal(t, []string{draw.CheckBeacon}, refused.Failed(), "%s", refused.String())
	require.Contains(t, refused.String(), "development chain, whose key anyone can derive")
	p.DevChainOK = true
	p.PinnedRound, p.PinnedRoot = b.round, hex.EncodeToString(b.root[:]) // what a buyer kept checks out
	rep := draw.Verify(p)
	require.True(t, rep.OK(), "%s", rep.String())
	require.Contains(t, rep.Beacon, "DEVELOPMENT CHAIN")
	require.Contains(t, rep.String(), "DEVELOPMENT CHAIN")
	t.Logf("\n%s", rep.String())
}

// A real quicknet round checks out offline, named as quicknet's: round
// 123 (beacon/chain_test.go's vector) is the round of a sale that started
// 10 s before it.
func TestVerifyBeacon_ARealQuicknetRoundChecksOut(t *testing.T) {
	sig, err := hex.DecodeString("b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92")
	require.NoError(t, err)
	b := newBeaconDraw(t, 25, 4, beacon.DevSigner())
	b.startsAt = beacon.Quicknet.RoundTime(123).Add(-beacon.DrawDelay)
	b.round, b.sig = 123, sig
	rep := draw.Verify(b.get(beacon.Quicknet))
	require.True(t, rep.OK(), "%s", rep.String())
	require.Contains(t, rep.Beacon, "quicknet round 123")
}

// Tampering with any piece the ranks depend on fails verification: the
// round, the signature, the randomness, the root, an entry, the seed.
func TestVerifyBeacon_TamperingFails(t *testing.T) {
	b := newBeaconDraw(t, 40, 7, beacon.DevSigner())
	for name, tc := range map[string]struct {
		tamper func(p *draw.Published)
		fails  []string
	}{
		"the round": {func(p *draw.Published) { p.Beacon.Round++ }, []string{draw.CheckBeacon}},
		"the round, signed too (another round than the one fixed)": {func(p *draw.Published) {
			p.Beacon.Round++
			sig := beacon.DevSigner().Sign(p.Beacon.Round)
			r := beacon.Randomness(sig)
			p.Beacon.Signature, p.Beacon.Randomness = hex.EncodeToString(sig), hex.EncodeToString(r[:])
		}, []string{draw.CheckBeacon, draw.CheckTopK, draw.CheckStated, draw.CheckEachRank}},
		"the signature": {func(p *draw.Published) {
			s := []byte(p.Beacon.Signature)
			s[10] ^= 1
			p.Beacon.Signature = string(s)
		}, []string{draw.CheckBeacon}},
		"the signature re-encoded uncompressed (the same point, another randomness)": {func(p *draw.Published) {
			var g bls12381.G1
			if err := g.SetBytes(b.sig); err != nil {
				panic(err)
			}
			sig := g.Bytes()
			r := beacon.Randomness(sig)
			p.Beacon.Signature, p.Beacon.Randomness = hex.EncodeToString(sig), hex.EncodeToString(r[:])
		}, []string{draw.CheckBeacon}},
		"the randomness": {func(p *draw.Published) { p.Beacon.Randomness = hex.EncodeToString(make([]byte, 32)) }, []string{draw.CheckBeacon}},
		"the root": {func(p *draw.Published) {
			r := sha256.Sum256([]byte("another root"))
			p.EntriesRoot = hex.EncodeToString(r[:])
		}, []string{draw.CheckRoot}},
		"an entry": {func(p *draw.Published) {
			lines := defaults(b.entries)
			lines[3] = lines[3][:31] + "0 default 1"
			if lines[3] == defaults(b.entries)[3] {
				lines[3] = lines[3][:31] + "1 default 1"
			}
			p.Entries = draw.EntriesOf(lines...)
		}, []string{draw.CheckRoot}},
		"entries committed after the round's time": {func(p *draw.Published) {
			late := beacon.Dev.RoundTime(p.Beacon.Round).Add(time.Second)
			p.CommittedAt = &late
		}, []string{draw.CheckBeacon}},
		"another round than the one pinned by the buyer": {func(p *draw.Published) { p.PinnedRound = p.Beacon.Round + 1 }, []string{draw.CheckBeacon}},
		"no beacon, though the buyer pinned a round": {func(p *draw.Published) {
			p.Beacon, p.SaleBeacon, p.EntriesRoot, p.PinnedRound = nil, nil, "", p.Beacon.Round
		}, []string{draw.CheckBeacon}},
		"another root than the one pinned by the buyer": {func(p *draw.Published) { p.PinnedRoot = hex.EncodeToString(make([]byte, 32)) }, []string{draw.CheckRoot}},
		"no committed_at": {func(p *draw.Published) { p.CommittedAt = nil }, []string{draw.CheckBeacon}},
		"the seed":        {func(p *draw.Published) { p.Seed = hex.EncodeToString(draw.NewSeed()) }, []string{draw.CheckCommitment}},
		"no beacon published for a sale that showed one": {func(p *draw.Published) { p.Beacon = nil }, []string{draw.CheckBeacon}},
		"another chain than the sale showed":             {func(p *draw.Published) { p.SaleBeacon.ChainHash = beacon.Quicknet.Hash }, []string{draw.CheckBeacon}},
		"an unpinned chain": {func(p *draw.Published) {
			p.Beacon.ChainHash = hex.EncodeToString(make([]byte, 32))
			p.SaleBeacon.ChainHash = p.Beacon.ChainHash
		}, []string{draw.CheckBeacon}},
	} {
		t.Run(name, func(t *testing.T) {
			p := b.get(beacon.Dev)
			tc.tamper(&p)
			rep := draw.Verify(p)
			require.False(t, rep.OK(), "%s", rep.String())
			for _, c := range tc.fails {
				require.Contains(t, rep.Failed(), c, "%s", rep.String())
			}
		})
	}
}

// The operator knows the secret seed during the lobby and makes the entry
// tokens. Against v3's draw (ranks by SHA-256(seed ‖ entry)) an insider
// who grinds tokens takes every winning rank. With the beacon the ranks
// are SHA-256(SHA-256(seed ‖ randomness ‖ root) ‖ entry): a function of a
// round's randomness that nobody knows when the root is committed. Over
// many rounds the ground entries win at the rate of any entries, as if
// they were picked at random.
func TestBeaconSeed_AnInsiderWhoKnowsTheSeedCannotPredictTheRanks(t *testing.T) {
	const (
		honest  = 950
		insider = 50
		k       = 10 // units
		rounds  = 300
	)
	// Fixed inputs, so the test says the same every run.
	token := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:draw.EntrySize] }
	seed := sha256.Sum256([]byte("the operator's secret seed"))
	var entries [][]byte
	for i := range honest {
		entries = append(entries, token("honest "+strconv.Itoa(i)))
	}
	// The insider grinds: of 100,000 candidate tokens, keeps the 50 that
	// rank first under the seed alone.
	var candidates [][]byte
	for i := range 100_000 {
		candidates = append(candidates, token("candidate "+strconv.Itoa(i)))
	}
	ground := draw.Rank(seed[:], candidates)[:insider]
	isInsider := map[string]bool{}
	for _, g := range ground {
		entries = append(entries, g.Entry)
		isInsider[string(g.Entry)] = true
	}

	// v3: the seed alone. The insider holds every winning rank.
	for _, r := range draw.Rank(seed[:], entries)[:k] {
		require.True(t, isInsider[string(r.Entry)], "v3: rank %d is the insider's", r.Rank)
	}

	// v4: the root is committed, then the round's randomness decides.
	lines := make([][]byte, len(entries))
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b []byte) int { return slices.Compare(a, b) })
	for i, e := range sorted {
		lines[i] = draw.Line(e, "default", 1)
	}
	root := draw.Root(lines)
	wins := 0
	for i := range rounds {
		randomness := sha256.Sum256([]byte("a round nobody knew: " + strconv.Itoa(i)))
		for _, r := range draw.Rank(draw.BeaconSeed(seed[:], randomness[:], root[:]), entries)[:k] {
			if isInsider[string(r.Entry)] {
				wins++
			}
		}
	}
	// Expected: rounds × k × 50/1000 = 150 (standard deviation about 12).
	t.Logf("the insider's 50 of 1000 entries won %d of %d winning ranks over %d rounds (fair: %d)", wins, rounds*k, rounds, rounds*k*insider/(honest+insider))
	require.InDelta(t, rounds*k*insider/(honest+insider), wins, 60, "the ground entries win as often as any")
}

// BenchmarkVerify_1M is `seckill draw verify` on a draw of 1,000,000
// entries and 1,000 units, from the published body on: reading the
// entries (with their RFC 6962 root, computed as they stream), the
// commitment, the ranks and the orders, with the seed alone (v3) and with
// the root and the beacon round's BLS signature (v4).
func BenchmarkVerify_1M(b *testing.B) {
	const n, stock = 1_000_000, 1_000
	bd := &beaconDraw{seed: draw.NewSeed(), stock: stock, startsAt: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	for range n {
		bd.entries = append(bd.entries, hex.EncodeToString(draw.NewEntry()))
	}
	slices.Sort(bd.entries)
	signer := beacon.DevSigner()
	bd.round = signer.Chain().DrawRound(bd.startsAt)
	bd.sig = signer.Sign(bd.round)
	bd.root = draw.Root(lineBytes(bd.entries))
	var body []byte
	for _, l := range defaults(bd.entries) {
		body = append(append(body, l...), '\n')
	}
	v4 := bd.get(beacon.Dev)
	v3 := v4
	v3.EntriesRoot, v3.Beacon, v3.SaleBeacon = "", nil, nil
	v3.Orders = nil
	raw := make([][]byte, n)
	for i, e := range bd.entries {
		raw[i], _ = hex.DecodeString(e)
	}
	for i, r := range draw.Rank(bd.seed, raw)[:stock] {
		v3.Orders = append(v3.Orders, draw.Order{ID: strconv.Itoa(500 + i), Entry: hex.EncodeToString(r.Entry), Rank: int64(r.Rank)})
	}
	for name, p := range map[string]draw.Published{"v3 seed alone": v3, "v4 root and beacon": v4} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := draw.ReadEntries(bytes.NewReader(body), n)
				if err != nil {
					b.Fatal(err)
				}
				p.Entries = l
				if rep := draw.Verify(p); !rep.OK() {
					b.Fatal(rep.String())
				}
			}
		})
	}
}
