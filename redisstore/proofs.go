package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/seckill/seckill"
)

// ProofGrace keeps the record of a used proof of work a little longer
// than its challenge is valid, so a Redis clock ahead of the API's cannot
// let it be used again at the end.
const ProofGrace = time.Minute

// proofIDLen is how much of a challenge (hex SHA-256) names its proof in
// Redis: 128 bits.
const proofIDLen = 32

// ProofKey is the key that records the use of the proof of work of
// challenge (hex) by userID on sale saleID: under the hash tag of the
// buyer's stock segment ({s<id>} on a sale of one segment), so the
// records of a hot sale spread like its claims on a Redis Cluster.
func (s *Store) ProofKey(ctx context.Context, saleID int64, userID, challenge string) (string, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil {
		return "", err
	}
	if len(challenge) > proofIDLen {
		challenge = challenge[:proofIDLen]
	}
	return s.prefix + ":{" + s.segments.tag(saleID, segmentOf(userID, n)) + "}:pow:" + challenge, nil
}

// UseProof records that userID used the proof of work of challenge on
// sale saleID, until expires (plus ProofGrace), with one SET NX. It
// reports whether the use counts: the proof's first (ProofTaken), or,
// when retry is not "", a use again with the same retry (ProofRetried:
// the same request sent again under its Idempotency-Key, which the claim
// answers from its record).
//
// The record is not waited for on replicas: a failover that loses it
// lets one proof be used once more, which costs its user nothing they
// did not already have.
func (s *Store) UseProof(ctx context.Context, saleID int64, userID, challenge string, expires time.Time, retry string) (seckill.ProofUse, error) {
	key, err := s.ProofKey(ctx, saleID, userID, challenge)
	if err != nil {
		return seckill.ProofUsed, err
	}
	mark := proofMark(retry)
	got, err := useProofScript.Run(ctx, s.rdb, []string{key}, mark, expires.Add(ProofGrace).UnixMilli()).Int()
	if err != nil {
		return seckill.ProofUsed, fmt.Errorf("record the use of a proof of work: %w", err)
	}
	switch got {
	case 1:
		return seckill.ProofTaken, nil // not used before: recorded now
	case 2:
		return seckill.ProofRetried, nil // and the taker can no longer give it back
	}
	return seckill.ProofUsed, nil
}

// GiveProofBack deletes the record of a use UseProof answered ProofTaken
// (the same saleID, userID, challenge and retry), while it is still that
// use's alone (one compare-and-delete, unlock.lua): the proof counts
// again. It is for a request answered "try again", which decided nothing.
// Once a copy of the request used the proof again (ProofRetried), it stays
// spent: that copy may have bought a decision with it.
func (s *Store) GiveProofBack(ctx context.Context, saleID int64, userID, challenge, retry string) error {
	key, err := s.ProofKey(ctx, saleID, userID, challenge)
	if err != nil {
		return err
	}
	if err := unlockScript.Run(ctx, s.rdb, []string{key}, proofMark(retry)).Err(); err != nil {
		return fmt.Errorf("give a proof of work back: %w", err)
	}
	return nil
}

// proofMark is the value of a proof's record: "1", or "h:" and a digest
// of the retry tag of the request that took it. The digest is hex, so a
// mark never ends in the "*" useproof.lua appends to a used one: a tag
// that ended in one ("k*") would otherwise pass for another's ("k") used
// mark, and a proof would buy two requests. The prefix is not the "r:" of
// the marks that held the tag itself, so during a rolling upgrade no tag
// sent to an older node matches a newer node's mark.
func proofMark(retry string) string {
	if retry == "" {
		return "1"
	}
	sum := sha256.Sum256([]byte(retry))
	return "h:" + hex.EncodeToString(sum[:16])
}
