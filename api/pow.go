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
	UseProof(ctx context.Context, saleID int64, userID, challenge string, expires time.Time, retry string) (seckill.ProofUse, error)
	GiveProofBack(ctx context.Context, saleID int64, userID, challenge, retry string) error
}

// proofGiveBackWait bounds giving a proof back, on a context of its own:
// the request's may be spent already (a claim that timed out).
const proofGiveBackWait = time.Second

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

// A proof of work is spent by an answer that decides (admitted, already
// claimed, sold out, ended, waiting, entered...), never by one that asks
// the buyer to send the request again (asksToTryAgain): the retry that a
// DRAW_IN_PROGRESS, a 503 or a 429 asks for shows the same solution.
//
// A request takes its proof before the decision (one SET NX, as a lone
// use always has) and gives it back after an answer that asks to try
// again. Taking it first keeps a proof in one request at a time: copies
// of one solution sent at once get one decision, the others 403, which
// recording it only after a final answer would not (every copy would pass
// until the first is recorded). Recording it in the deciding script
// itself would not serve the lobby, decided in Postgres, nor a Redis
// error, which the claim cannot tell from a decision it did not hear.
// Giving it back after such an error is safe: claims, joins and entries
// are one per buyer, so the retry finds what the first request did
// (ALREADY_CLAIMED with its order, ALREADY_WAITING, the same entry).
// Only the request that took the proof gives it back, and only while the
// record is still its own; a retry under the same Idempotency-Key that
// overlaps the first may then find the proof given back after it decided,
// which lets it be shown once more for that buyer's one claim. A give-back
// that fails (Redis down) leaves the proof spent: the buyer solves a new
// challenge, as before.

// takenProof is a proof of work a request took: what giveProofBack needs.
type takenProof struct {
	saleID               int64
	user, challenge, key string // key: the request's Idempotency-Key ("" for none)
}

// takeProof checks the X-Seckill-Proof of a request by userID on sale and
// records its use: the proof taken (nil when the sale needs none, or when
// retry, the request's Idempotency-Key, took it before), or a
// PROOF_REQUIRED *seckill.Error saying what is wrong (UNAVAILABLE when the
// record cannot be written: nothing is admitted without it). The same
// proof sent again with the same Idempotency-Key is the same request, and
// is let through to be answered from the claim's record. Call it after
// the cheap refusals and before any admission work, and giveProofBack
// with its answer.
func (s *Server) takeProof(c *fiber.Ctx, sale *seckill.Sale, userID, retry string) (*takenProof, error) {
	if sale.ProofDifficulty <= 0 {
		return nil, nil
	}
	proof, err := s.pow.Verify(c.Get(HeaderProof), sale.ID, userID, time.Now())
	if err != nil {
		return nil, proofError(err, sale.ID)
	}
	rec, ok := s.cfg.Redis.(proofRecorder)
	if !ok {
		return nil, seckill.Errorf(seckill.CodeUnavailable, "proofs of work cannot be checked; try again shortly")
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	use, err := rec.UseProof(ctx, sale.ID, userID, proof.Challenge, proof.Expires, retry)
	switch {
	case err != nil:
		s.logFor(c).Warn("proof of work not recorded", "saleID", sale.ID, "error", err)
		return nil, seckill.Errorf(seckill.CodeUnavailable, "proofs of work cannot be checked; try again shortly")
	case use == seckill.ProofUsed:
		return nil, proofError(pow.ErrUsed, sale.ID)
	case use == seckill.ProofRetried:
		return nil, nil // the request that took it gives it back, if anyone
	}
	return &takenProof{saleID: sale.ID, user: userID, challenge: proof.Challenge, key: retry}, nil
}

// giveProofBack gives p back when answer, the request's, asks the buyer to
// try again. Nothing to do for a nil p.
func (s *Server) giveProofBack(c *fiber.Ctx, p *takenProof, answer error) {
	if p == nil || !asksToTryAgain(answer) {
		return
	}
	rec, _ := s.cfg.Redis.(proofRecorder) // takeProof had one
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), proofGiveBackWait)
	defer cancel()
	if err := rec.GiveProofBack(ctx, p.saleID, p.user, p.challenge, p.key); err != nil {
		s.logFor(c).Warn("proof of work not given back", "saleID", p.saleID, "error", err)
	}
}

// asksToTryAgain reports whether answer asks the buyer to send the same
// request again, later: not started yet, the draw running, rate limited,
// unavailable, or an error of ours. Such an answer decided nothing the
// buyer was told.
func asksToTryAgain(answer error) bool {
	switch seckill.ErrorCode(answer) {
	case seckill.CodeSaleNotStarted, seckill.CodeDrawInProgress, seckill.CodeRateLimited,
		seckill.CodeUnavailable, seckill.CodeInternal:
		return true
	}
	return false
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
