package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// maxPresaleClaim bounds presale.claim: a pointer and a value, as short
// as a setting is.
const maxPresaleClaim = 500

// presaleRequest is a sale's optional presale (docs/API.md "Presale").
type presaleRequest struct {
	StartsAt *string `json:"starts_at"`
	Claim    *string `json:"claim"`
}

// presale validates r against the sale's start: presale.starts_at before
// starts_at, claim as SECKILL_ADMIN_CLAIM is written (auth's parser reads
// both). A sale with a lobby has none: the draw decides who buys first.
func (r *presaleRequest) presale(startsAt time.Time, lobby bool) (*seckill.Presale, error) {
	switch {
	case r == nil:
		return nil, nil
	case lobby:
		return nil, invalid("presale", "a sale has a presale or a lobby (lobby_opens_at), not both")
	case r.StartsAt == nil:
		return nil, invalid("presale.starts_at", "is required")
	case r.Claim == nil:
		return nil, invalid("presale.claim", "is required")
	}
	at, err := parseTime("presale.starts_at", *r.StartsAt)
	if err != nil {
		return nil, err
	}
	if !at.Before(startsAt) {
		return nil, invalid("presale.starts_at", "must be before starts_at")
	}
	if len(*r.Claim) > maxPresaleClaim {
		return nil, invalid("presale.claim", "must be at most %d bytes", maxPresaleClaim)
	}
	if _, err := auth.ParseAdminClaim(*r.Claim); err != nil || !printable(*r.Claim) {
		return nil, invalid("presale.claim", "must be <JSON Pointer>=<value> as SECKILL_ADMIN_CLAIM is written, e.g. /groups=vip; got %q", *r.Claim)
	}
	return &seckill.Presale{StartsAt: at.UTC().Truncate(time.Millisecond), Claim: *r.Claim}, nil
}

// member reports whether the caller's verified token carries sale's
// presale claim: they may claim and join from the presale's start.
func member(c *fiber.Ctx, sale *seckill.Sale) bool {
	if sale.Presale == nil {
		return false
	}
	claim, err := auth.ParseAdminClaim(sale.Presale.Claim) // validated at creation
	return err == nil && principal(c).Holds(claim)
}
