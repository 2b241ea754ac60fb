package api

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/pow"
)

// HeaderProof carries a proof of work: the base64 of ALTCHA's solution
// JSON (docs/API.md "Proof of work").
const HeaderProof = "X-Seckill-Proof"

// proofRefused is the outcome of a claim or join refused for its proof.
const proofRefused = seckill.Outcome(seckill.CodeProofRequired)

// proofRecorder is the single-use record of proofs (redisstore.Store). It
// is asked of Config.Redis by type, so the Redis interface stays as the
// handlers without proofs need it.
type proofRecorder interface {
	UseProof(ctx context.Context, saleID int64, userID, challenge string, expires time.Time, retry string) (bool, error)
}

// proofKey is the key that signs challenges: Config.ProofKey, or one
// derived from the webhook secret, so every replica agrees.
func proofKey(cfg Config) *pow.Key {
	if len(cfg.ProofKey) > 0 {
		return pow.NewKey(cfg.ProofKey)
	}
	return pow.NewKey(pow.DeriveKey(cfg.WebhookSecret))
}

// challenge is GET /api/v1/sales/{id}/challenge: an ALTCHA challenge of
// the sale's difficulty for the caller, valid until 5 minutes after the
// later of the start and now. A sale without proof_of_work answers 404
// NOT_FOUND (it has no challenge to give); an ended one 409 SALE_ENDED.
func (s *Server) challenge(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.saleOf(ctx, c)
	if err != nil {
		return err
	}
	if sale.ProofDifficulty <= 0 {
		return seckill.Errorf(seckill.CodeNotFound, "this sale needs no proof of work: claim without one")
	}
	now := time.Now()
	if !now.Before(sale.EndsAt) {
		return errSaleEnded
	}
	ch, err := s.pow.Issue(sale.ID, principal(c).UserID, int64(sale.ProofDifficulty), pow.Expiry(sale.StartsAt, now))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(ch)
}

// checkProof checks the X-Seckill-Proof of a request by userID on sale,
// and records its use: nil, or a PROOF_REQUIRED *seckill.Error saying
// what is wrong (UNAVAILABLE when the record cannot be written: nothing
// is admitted without it). Call it only for a sale with ProofDifficulty >
// 0, after the cheap refusals and before any admission work.
func (s *Server) checkProof(c *fiber.Ctx, sale *seckill.Sale, userID string) error {
	return s.checkProofRetry(c, sale, userID, "")
}

// checkProofRetry is checkProof for a request that may be retried under
// an Idempotency-Key (a claim): the same proof sent again with the same
// key is the same request, and is let through to be answered from the
// claim's record.
func (s *Server) checkProofRetry(c *fiber.Ctx, sale *seckill.Sale, userID, retry string) error {
	if sale.ProofDifficulty <= 0 {
		return nil
	}
	proof, err := s.pow.Verify(c.Get(HeaderProof), sale.ID, userID, time.Now())
	if err != nil {
		return proofError(err, sale.ID)
	}
	rec, ok := s.cfg.Redis.(proofRecorder)
	if !ok {
		return seckill.Errorf(seckill.CodeUnavailable, "proofs of work cannot be checked; try again shortly")
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	fresh, err := rec.UseProof(ctx, sale.ID, userID, proof.Challenge, proof.Expires, retry)
	if err != nil {
		s.logFor(c).Warn("proof of work not recorded", "saleID", sale.ID, "error", err)
		return seckill.Errorf(seckill.CodeUnavailable, "proofs of work cannot be checked; try again shortly")
	}
	if !fresh {
		return proofError(pow.ErrUsed, sale.ID)
	}
	return nil
}

// proofError is the 403 for a proof pow refused, in words that say what
// to do.
func proofError(err error, saleID int64) *seckill.Error {
	var why string
	switch {
	case errors.Is(err, pow.ErrMissing):
		why = "this sale needs a proof of work in the " + HeaderProof + " header"
	case errors.Is(err, pow.ErrMalformed):
		why = "the " + HeaderProof + " header is not a proof of work (base64 of the solution JSON)"
	case errors.Is(err, pow.ErrExpired):
		why = "the proof of work has expired"
	case errors.Is(err, pow.ErrOtherSale):
		why = "the proof of work is for another sale"
	case errors.Is(err, pow.ErrOtherUser):
		why = "the proof of work is for another user"
	case errors.Is(err, pow.ErrUsed):
		why = "the proof of work was already used: each is accepted once"
	case errors.Is(err, pow.ErrSignature):
		why = "the proof of work is for a challenge this shop did not issue"
	default: // pow.ErrWrong
		why = "the proof of work does not solve its challenge"
	}
	return seckill.Errorf(seckill.CodeProofRequired, "%s; solve a new challenge from GET /api/v1/sales/%d/challenge", why, saleID)
}
