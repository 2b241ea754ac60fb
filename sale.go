package seckill

import (
	"strconv"
	"time"
)

// Limits of a sale, from docs/API.md.
const (
	MaxStock                     = 10_000_000
	MinPaymentTimeout            = 5 * time.Second
	MaxPaymentTimeout            = 24 * time.Hour
	DefaultPaymentTimeoutSeconds = 900
	DefaultCurrency              = "usd"
	MaxSaleNameLength            = 200
	// MaxStockSegments bounds stock_segments: the parts a sale's Redis
	// stock is split into.
	MaxStockSegments = 64
	// Proof-of-work difficulty bounds (proof_of_work.difficulty): the
	// largest number a challenge's solution may be (ALTCHA's maxnumber).
	MinProofDifficulty = 1000
	MaxProofDifficulty = 10_000_000
)

// NewSale is what an admin creates (POST /api/v1/sales, validated).
type NewSale struct {
	Name     string
	Currency string
	// Variants are the sale's 1..MaxVariants variants, each with its
	// stock and price (a v3 body becomes one, sku DefaultSKU).
	Variants []NewVariant
	// LimitPerBuyer is the most units one buyer's active order may hold
	// (1..MaxLimitPerBuyer; 0: DefaultLimitPerBuyer).
	LimitPerBuyer  int
	StartsAt       time.Time
	EndsAt         time.Time
	PaymentTimeout time.Duration
	// StockSegments is how many segments the Redis stock is split into
	// (0: 1).
	StockSegments int
	// LobbyOpensAt, when set (before StartsAt), gives the units at the
	// start by a draw among the lobby's entries (docs/API.md "Fair
	// start").
	LobbyOpensAt *time.Time
	// ProofDifficulty, when not 0, makes claims, waitlist joins and lobby
	// entries carry a proof of work of this difficulty (docs/API.md
	// "Proof of work").
	ProofDifficulty int
	// Presale, when set, opens the sale early to the buyers whose token
	// carries its claim (docs/API.md "Presale"). Never with a lobby.
	Presale *Presale
	// Beacon, with a lobby, is the beacon round its draw waits for
	// (docs/API.md "A draw nobody can bias"); nil: the draw uses its
	// secret seed alone (SECKILL_BEACON_URLS=none).
	Beacon *DrawBeacon
}

// DrawBeacon is the public randomness a draw's ranks depend on: round
// Round of the drand chain whose hash is Chain, published at RoundAt.
type DrawBeacon struct {
	Chain   string
	Round   uint64
	RoundAt time.Time
}

// Presale is a sale's members' window: from StartsAt (before the sale's
// starts_at) the buyers whose token carries Claim may claim and join the
// waitlist; everyone else waits for the sale's starts_at.
type Presale struct {
	StartsAt time.Time
	// Claim is "<JSON Pointer>=<value>", written as SECKILL_ADMIN_CLAIM
	// is (auth.ParseAdminClaim reads it): the claim must be the value, or
	// an array holding it.
	Claim string
}

// SaleState is derived from the clock and the stock, never stored.
type SaleState string

// Sale states of docs/API.md.
const (
	StateScheduled SaleState = "SCHEDULED"
	StatePresale   SaleState = "PRESALE"
	StateLobby     SaleState = "LOBBY"
	StateDrawing   SaleState = "DRAWING"
	StateActive    SaleState = "ACTIVE"
	StateSoldOut   SaleState = "SOLD_OUT"
	StateEnded     SaleState = "ENDED"
)

// Sale is a flash sale: one product in one or more variants, each with a
// fixed stock and price, offered in a time window.
type Sale struct {
	ID   int64
	Name string
	// PriceCents is the lowest variant price (SumVariants).
	PriceCents     int64
	Currency       string
	StartsAt       time.Time
	EndsAt         time.Time
	PaymentTimeout time.Duration
	// StockSegments is how many parts the Redis stock is split into (1..64).
	StockSegments int
	// LobbyOpensAt: the sale starts with a draw (nil: first come).
	LobbyOpensAt *time.Time
	// ProofDifficulty: claims, joins and entries need a proof of work of
	// this difficulty (0: none).
	ProofDifficulty int
	// Presale: the members' window before StartsAt (nil: none).
	Presale *Presale
	// Drawn is when the draw finished (nil: not yet, or no lobby).
	Drawn *time.Time
	// DrawCommitment is the hex SHA-256 of the draw's seed, published
	// from LobbyOpensAt on ("" without a lobby).
	DrawCommitment string
	// DrawBeacon is the beacon round the draw waits for (nil: none).
	DrawBeacon *DrawBeacon
	// LimitPerBuyer is the most units one buyer's active order may hold
	// (0 in sales read before v4: Limit says 1).
	LimitPerBuyer int
	// Variants are the sale's variants, each with its stock split; Stock
	// is their sum (SumVariants).
	Variants []Variant
	Stock    Stock
}

// Stock is the split of a sale's (or a variant's) units. Total, Available, Locked and Sold
// come from Postgres (the authority); Remaining from the Redis counter.
type Stock struct {
	Total     int64 `json:"total"`
	Remaining int64 `json:"remaining"`
	Available int64 `json:"available"`
	Locked    int64 `json:"locked"`
	Sold      int64 `json:"sold"`
}

// State is the sale's state at now.
func (s *Sale) State(now time.Time) SaleState {
	switch {
	case s.LobbyOpensAt != nil && now.Before(*s.LobbyOpensAt):
		return StateScheduled
	case s.LobbyOpensAt != nil && now.Before(s.StartsAt):
		return StateLobby
	case s.Presale != nil && now.Before(s.StartsAt) && !now.Before(s.Presale.StartsAt):
		return StatePresale
	case now.Before(s.StartsAt):
		return StateScheduled
	case s.LobbyOpensAt != nil && s.Drawn == nil && now.Before(s.EndsAt):
		return StateDrawing
	case !now.Before(s.EndsAt):
		return StateEnded
	case s.Stock.Remaining <= 0:
		return StateSoldOut
	default:
		return StateActive
	}
}

// OpensAt is when sale takes claims and joins from a buyer: its presale's
// start for a member (whose token carries the presale's claim), else its
// starts_at.
func (s *Sale) OpensAt(member bool) time.Time {
	if member && s.Presale != nil {
		return s.Presale.StartsAt
	}
	return s.StartsAt
}

// PayBy is the deadline of an order admitted at admittedAt when its
// admission did not fix one: the sale's payment timeout after it, UTC.
func (s *Sale) PayBy(admittedAt time.Time) time.Time {
	return admittedAt.Add(s.PaymentTimeout).UTC()
}

// SaleJSON is the wire form of a Sale.
type SaleJSON struct {
	ID                    string        `json:"id"`
	Name                  string        `json:"name"`
	PriceCents            int64         `json:"price_cents"`
	Currency              string        `json:"currency"`
	StartsAt              time.Time     `json:"starts_at"`
	EndsAt                time.Time     `json:"ends_at"`
	PaymentTimeoutSeconds int64         `json:"payment_timeout_seconds"`
	StockSegments         int           `json:"stock_segments"`
	State                 SaleState     `json:"state"`
	LimitPerBuyer         int           `json:"limit_per_buyer"`
	Stock                 Stock         `json:"stock"`
	Variants              []VariantJSON `json:"variants"`
	// LobbyOpensAt and Draw: a sale with a lobby (docs/API.md "Fair
	// start"); Draw shows the seed's commitment from the lobby's opening.
	LobbyOpensAt *time.Time `json:"lobby_opens_at,omitempty"`
	Draw         *DrawJSON  `json:"draw,omitempty"`
	// ProofOfWork: claims, waitlist joins and lobby entries carry a proof
	// of work (docs/API.md "Proof of work").
	ProofOfWork *ProofOfWorkJSON `json:"proof_of_work,omitempty"`
	// Presale: the sale opens early to members (docs/API.md "Presale").
	Presale *PresaleJSON `json:"presale,omitempty"`
	// Waitlist: the sale's line while it is SOLD_OUT, shown by GET
	// /sales/{id} only (docs/API.md "Waitlist"), so a shop offers a join
	// only when one can succeed.
	Waitlist *WaitlistJSON `json:"waitlist,omitempty"`
}

// WaitlistJSON is the sale object's view of its waitlist: a join is
// refused WAITLIST_FULL while Waiting is Max or more.
type WaitlistJSON struct {
	// Waiting is how many buyers are in line.
	Waiting int64 `json:"waiting"`
	// Max is the line's bound (SECKILL_WAITLIST_MAX).
	Max int `json:"max"`
}

// PresaleJSON is a sale's presale as it was given.
type PresaleJSON struct {
	StartsAt time.Time `json:"starts_at"`
	Claim    string    `json:"claim"`
}

// ProofOfWorkJSON is a sale's proof-of-work setting.
type ProofOfWorkJSON struct {
	Difficulty int `json:"difficulty"`
}

// DrawJSON is the sale object's view of its draw.
type DrawJSON struct {
	Commitment string           `json:"commitment"`
	Beacon     *BeaconRoundJSON `json:"beacon,omitempty"`
}

// BeaconRoundJSON names a beacon round: the sale object shows the round
// its draw waits for; GET /draw adds the round's signature and its
// randomness once the draw has used it.
type BeaconRoundJSON struct {
	ChainHash  string `json:"chain_hash"`
	Round      uint64 `json:"round"`
	Signature  string `json:"signature,omitempty"`
	Randomness string `json:"randomness,omitempty"`
}

// JSON returns the wire form of s at now.
func (s *Sale) JSON(now time.Time) SaleJSON {
	j := SaleJSON{
		ID:                    strconv.FormatInt(s.ID, 10),
		Name:                  s.Name,
		PriceCents:            s.PriceCents,
		Currency:              s.Currency,
		StartsAt:              s.StartsAt.UTC(),
		EndsAt:                s.EndsAt.UTC(),
		PaymentTimeoutSeconds: int64(s.PaymentTimeout / time.Second),
		StockSegments:         max(s.StockSegments, 1),
		State:                 s.State(now),
		LimitPerBuyer:         s.Limit(),
		Stock:                 s.Stock,
		Variants:              make([]VariantJSON, len(s.Variants)),
		LobbyOpensAt:          s.LobbyOpensAt,
	}
	for i, v := range s.Variants {
		j.Variants[i] = VariantJSON{SKU: v.SKU, Name: v.Name, PriceCents: v.PriceCents, Stock: v.Stock}
	}
	if s.ProofDifficulty > 0 {
		j.ProofOfWork = &ProofOfWorkJSON{Difficulty: s.ProofDifficulty}
	}
	if s.Presale != nil {
		j.Presale = &PresaleJSON{StartsAt: s.Presale.StartsAt.UTC(), Claim: s.Presale.Claim}
	}
	if s.LobbyOpensAt != nil && !now.Before(*s.LobbyOpensAt) && s.DrawCommitment != "" {
		j.Draw = &DrawJSON{Commitment: s.DrawCommitment}
		if b := s.DrawBeacon; b != nil {
			j.Draw.Beacon = &BeaconRoundJSON{ChainHash: b.Chain, Round: b.Round}
		}
	}
	return j
}
