package seckill

import (
	"errors"
	"time"
)

// A sale's lobby and its draw (docs/API.md "Fair start"): the vocabulary
// the store records, the draw's activities settle, the API publishes and
// the audit checks.

// The states of a sale's draw (sales.draw_state): entries are taken while
// OPEN (and before starts_at); CLOSED once the draw has closed the lobby,
// while it ranks; RANKED once every entry has its rank; DONE once every
// rank is settled and the sale is open to claims.
const (
	DrawOpen   = "OPEN"
	DrawClosed = "CLOSED"
	DrawRanked = "RANKED"
	DrawDone   = "DONE"
)

// The outcomes of an entry, once the draw has settled its rank.
const (
	EntryWon     = "WON"
	EntryWaiting = "WAITING"
	EntryLost    = "LOST"
)

// LobbyEntry is one buyer's entry in a sale's lobby.
type LobbyEntry struct {
	SaleID  int64
	UserID  string
	Entry   []byte
	Item    Item   // the variant and units it asks for
	Rank    int    // 0 until the draw has ranked it
	Fits    bool   // ranked: its variant still had its quantity at its rank (draw.Fitter)
	Outcome string // "" until the draw has settled it
	OrderID int64  // the order a WON entry was given
}

// EntryLine is one entry of a sale's lobby as the draw reads it and GET
// /draw/entries lists it: the entry and the item it asks for.
type EntryLine struct {
	Entry []byte
	Item  Item
}

// Draw is what is recorded of a sale's draw.
type Draw struct {
	SaleID   int64
	Seed     []byte // secret until State is DrawDone
	State    string
	NextRank int // the first rank not yet settled
	Entries  int // set once RANKED
	// RankedThrough is the last rank written (set once RANKED): the draw
	// writes the first ranks when it ranks, the rest when it reaches them
	// (store.RankRest). Entries when every entry has its rank.
	RankedThrough int
	Admitted      int // set once DONE
	// EndedAtRank is where the sale's end cut the draw, set once DONE:
	// the first rank of an entry that fits (LobbyEntry.Fits) not admitted
	// because the sale had ended (0: the end cut nothing). Admitted is
	// then the number of entries that fit ranked before it.
	EndedAtRank int
	DrawnAt     *time.Time
	// Beacon is the round the ranks wait for (nil: the seed alone).
	Beacon *DrawBeacon
	// Tree is the closed lobby's entries tree (draw.Tree, marshalled),
	// set once the lobby is committed: from then on the entries never
	// change.
	Tree []byte
	// CommittedAt is when Tree was recorded, by the database's clock.
	CommittedAt *time.Time
	// BeaconSignature is round Beacon.Round's signature, verified, set
	// before the first rank.
	BeaconSignature []byte
	// BeaconAt is when the signature was recorded: the randomness used.
	BeaconAt *time.Time
}

// DrawOrder is an order the draw gave: the entry that won it and its
// rank, and the item the order is of.
type DrawOrder struct {
	OrderID int64
	Entry   []byte
	Rank    int
	Item    Item
}

// DrawVariant is what a sale's draw did with one variant: the units it
// drew (the variant's stock when it ranked the lobby) and the entries it
// admitted.
type DrawVariant struct {
	SKU      string
	Stock    int64
	Admitted int
}

// ErrLobbyClosed: the sale's lobby takes no more entries (its draw has
// begun or the sale has started).
var ErrLobbyClosed = errors.New("the lobby is closed")

// PublishedDrawJSON is GET /api/v1/sales/{id}/draw, a done draw as
// published: the API writes it, `seckill draw verify` and the bench read
// it.
type PublishedDrawJSON struct {
	Commitment string `json:"commitment"`
	Seed       string `json:"seed"`
	Entries    int64  `json:"entries"`
	Admitted   int64  `json:"admitted"`
	// EndedAtRank: the sale ended during its draw, which admitted the
	// entries that fit ranked before this one only (absent: the end cut
	// nothing).
	EndedAtRank int64 `json:"ended_at_rank,omitempty"`
	// Variants: per variant, in the sale's order, the units the draw
	// gave (its stock when the lobby was ranked: a restock after the
	// draw does not change it) and the entries it admitted, so a
	// verifier recomputes each variant's admitted entries.
	Variants []DrawVariantJSON `json:"variants,omitempty"`
	// EntriesRoot is the RFC 6962 root of the entry lines, committed when
	// the lobby closed; Beacon the round the seed was mixed with, its
	// signature and randomness (null: the secret seed alone). Both are
	// absent from a draw made before v4, which had neither.
	EntriesRoot string `json:"entries_root,omitempty"`
	// CommittedAt is when the root was committed (the database's clock):
	// before the beacon round's time, or the draw cannot prove the
	// randomness was unknown then.
	CommittedAt *time.Time       `json:"committed_at,omitempty"`
	Beacon      *BeaconRoundJSON `json:"beacon"`
}

// CommittedDrawJSON is GET /api/v1/sales/{id}/draw once the lobby is
// closed and its entries committed, before the ranks are published: the
// commitment to the seed, the entries' root and count, and the beacon
// round the ranks wait for (null: none).
type CommittedDrawJSON struct {
	Commitment  string           `json:"commitment"`
	EntriesRoot string           `json:"entries_root"`
	Entries     int64            `json:"entries"`
	CommittedAt *time.Time       `json:"committed_at,omitempty"`
	Beacon      *BeaconRoundJSON `json:"beacon"`
}

// InclusionProofJSON is an entry's RFC 6962 inclusion proof in the
// entries' tree (GET /lobby/me once the lobby is committed).
type InclusionProofJSON struct {
	LeafIndex uint64   `json:"leaf_index"`
	TreeSize  uint64   `json:"tree_size"`
	AuditPath []string `json:"audit_path"`
}

// DrawVariantJSON is one variant of PublishedDrawJSON.
type DrawVariantJSON struct {
	SKU      string `json:"sku"`
	Stock    int64  `json:"stock"`
	Admitted int64  `json:"admitted"`
}

// DrawOrderJSON is one order of GET /api/v1/sales/{id}/draw/orders.
type DrawOrderJSON struct {
	OrderID  string `json:"order_id"`
	Entry    string `json:"entry"`
	Rank     int64  `json:"rank"`
	SKU      string `json:"sku,omitempty"`
	Quantity int    `json:"quantity,omitempty"`
}

// DrawOrdersJSON is GET /api/v1/sales/{id}/draw/orders.
type DrawOrdersJSON struct {
	Orders []DrawOrderJSON `json:"orders"`
}

// LobbyEntryJSON is what POST /api/v1/sales/{id}/lobby and GET
// /api/v1/sales/{id}/lobby/me answer: the entry, then the draw's outcome
// for it.
type LobbyEntryJSON struct {
	SaleID   string `json:"sale_id,omitempty"`
	Status   string `json:"status"`
	Entry    string `json:"entry,omitempty"`
	Rank     int    `json:"rank,omitempty"`
	OrderID  string `json:"order_id,omitempty"`
	Position int64  `json:"position,omitempty"`
	SKU      string `json:"sku,omitempty"`
	Quantity int    `json:"quantity,omitempty"`
	// InclusionProof: once the lobby is committed, the entry's proof of
	// inclusion in the entries' tree.
	InclusionProof *InclusionProofJSON `json:"inclusion_proof,omitempty"`
}
