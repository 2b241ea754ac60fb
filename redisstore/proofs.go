package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
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
// reports whether the use counts: the proof's first, or, when retry is
// not "", a use again with the same retry (the same request sent again
// under its Idempotency-Key, which the claim answers from its record).
//
// The record is not waited for on replicas: a failover that loses it
// lets one proof be used once more, which costs its user nothing they
// did not already have.
func (s *Store) UseProof(ctx context.Context, saleID int64, userID, challenge string, expires time.Time, retry string) (bool, error) {
	key, err := s.ProofKey(ctx, saleID, userID, challenge)
	if err != nil {
		return false, err
	}
	value := "1"
	if retry != "" {
		value = "r:" + retry
	}
	prev, err := s.rdb.SetArgs(ctx, key, value, redis.SetArgs{Mode: "NX", Get: true, ExpireAt: expires.Add(ProofGrace)}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return true, nil // not used before: recorded now
	case err != nil:
		return false, fmt.Errorf("record the use of a proof of work: %w", err)
	}
	return retry != "" && prev == value, nil
}
