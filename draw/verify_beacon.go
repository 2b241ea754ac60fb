package draw

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/beacon"
)

// PublishedBeacon is a draw's "beacon" as published (GET /draw), or the
// round the sale object showed from the lobby's opening (ChainHash and
// Round only).
type PublishedBeacon struct {
	ChainHash  string
	Round      uint64
	Signature  string
	Randomness string
}

// Check names of the beacon (docs/API.md "A draw nobody can bias").
const (
	CheckRoot   = "the entries' root committed when the lobby closed is the RFC 6962 root of the published lines"
	CheckBeacon = "the beacon round is the one fixed when the lobby opened (the first at least 10 s after starts_at), and its signature is the chain's (checked offline against the pinned key)"
)

// beaconChecks checks the draw's entries root and beacon round; rankSeed
// is the seed its ranks are recomputed with: SHA-256(seed ‖ randomness ‖
// entries_root) with a beacon (from the published signature and root,
// whatever their checks say: a wrong one fails its own check), the
// secret seed alone without. note names the chain for people.
func beaconChecks(p Published, seed []byte) (rankSeed []byte, checks []Check, note string) {
	rankSeed = seed
	var pr problems
	root, err := hex.DecodeString(p.EntriesRoot)
	switch {
	case p.EntriesRoot == "" && p.Beacon == nil:
		// A draw from before v4 (or without a beacon) may have no root.
	case err != nil || len(root) != 32:
		pr.add("entries_root %q is not 64 hex characters", clip(p.EntriesRoot))
	default:
		if got := p.Entries.Root(); hex.EncodeToString(got[:]) != strings.ToLower(p.EntriesRoot) {
			pr.add("the published lines' root is %x, but entries_root is %s", got, p.EntriesRoot)
		}
	}
	if p.PinnedRoot != "" && !strings.EqualFold(p.PinnedRoot, p.EntriesRoot) {
		pr.add("the root seen when the lobby closed was %s, the draw publishes %q", p.PinnedRoot, clip(p.EntriesRoot))
	}
	rootCheck := pr.check(CheckRoot)
	if p.EntriesRoot == "" && p.Beacon == nil && p.PinnedRoot == "" {
		rootCheck.Skipped, rootCheck.Problems = true, []string{"the draw publishes no entries root (drawn before v4, or without a beacon)"}
	}

	var pb problems
	b := p.Beacon
	if p.PinnedRound != 0 && (b == nil || b.Round != p.PinnedRound) {
		pb.add("the round seen when the lobby opened was %d, the draw publishes %s", p.PinnedRound, roundOf(b))
	}
	switch {
	case b == nil && p.SaleBeacon != nil:
		pb.add("the sale showed beacon round %d of chain %s, but the draw publishes none", p.SaleBeacon.Round, p.SaleBeacon.ChainHash)
	case b == nil:
		note = "drawn from the operator's secret seed alone (no beacon, SECKILL_BEACON_URLS=none): whoever ran it knew the seed during the lobby"
	default:
		chain, ok := beacon.Lookup(strings.ToLower(b.ChainHash))
		sig, sigErr := hex.DecodeString(b.Signature)
		randomness := beacon.Randomness(sig)
		switch {
		case !ok:
			pb.add("chain %s is not a pinned chain (quicknet %s)", clip(b.ChainHash), beacon.Quicknet.Hash)
		case sigErr != nil:
			pb.add("the signature %q is not hex", clip(b.Signature))
		default:
			if err := chain.Verify(b.Round, sig); err != nil {
				pb.add("round %d: %v", b.Round, err)
			}
			if chain.Dev {
				note = "DEVELOPMENT CHAIN " + chain.Hash + ": seckill's own beacon, whose key anyone can derive; this draw proves nothing about bias"
				if !p.DevChainOK {
					pb.add("round %d is of the development chain, whose key anyone can derive: whoever ran the draw could sign any round (accepted only with --dev-chain)", b.Round)
				}
			} else {
				note = fmt.Sprintf("beacon: drand quicknet round %d, published %s", b.Round, chain.RoundTime(b.Round).Format(time.RFC3339))
			}
			if p.CommittedAt == nil {
				pb.add("the draw publishes no committed_at: nothing shows its entries were committed before round %d's time", b.Round)
			}
			if at := p.CommittedAt; at != nil && !at.Before(chain.RoundTime(b.Round)) {
				pb.add("the entries were committed at %s, not before round %d's time %s: whoever committed them could have known its randomness",
					at.UTC().Format(time.RFC3339Nano), b.Round, chain.RoundTime(b.Round).Format(time.RFC3339))
			}
			if !p.SaleStartsAt.IsZero() {
				if want := chain.DrawRound(p.SaleStartsAt); want != b.Round {
					pb.add("the draw used round %d, but the first round at least %s after starts_at %s is %d", b.Round, beacon.DrawDelay, p.SaleStartsAt.Format(time.RFC3339), want)
				}
			}
		}
		if hex.EncodeToString(randomness[:]) != strings.ToLower(b.Randomness) {
			pb.add("randomness %q is not SHA-256 of the signature (%x)", clip(b.Randomness), randomness)
		}
		if sb := p.SaleBeacon; sb != nil && (sb.Round != b.Round || !strings.EqualFold(sb.ChainHash, b.ChainHash)) {
			pb.add("the sale showed round %d of chain %s from the lobby's opening, but the draw used round %d of chain %s", sb.Round, sb.ChainHash, b.Round, b.ChainHash)
		}
		if seed != nil {
			rankSeed = BeaconSeed(seed, randomness[:], root)
		}
	}
	beaconCheck := pb.check(CheckBeacon)
	if b == nil && p.SaleBeacon == nil && p.PinnedRound == 0 {
		beaconCheck.Skipped, beaconCheck.Problems = true, []string{note}
	}
	return rankSeed, []Check{rootCheck, beaconCheck}, note
}

// roundOf names b's round for a problem ("none" without a beacon).
func roundOf(b *PublishedBeacon) string {
	if b == nil {
		return "none"
	}
	return fmt.Sprintf("round %d", b.Round)
}
