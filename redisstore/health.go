package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The reads behind the worker's health gauges (package opsmetrics).

// OldestAdmissions returns, for each of saleIDs whose outbox holds an
// entry (any segment), when the oldest entry's claim was admitted: the
// claim waiting longest for its saga. An entry is deleted once its saga
// has started, so what is left, read or not, still waits. One XRANGE
// COUNT 1 per segment, pipelined.
func (s *Store) OldestAdmissions(ctx context.Context, saleIDs []int64) (map[int64]time.Time, error) {
	type head struct {
		sale   int64
		stream string
		cmd    *redis.XMessageSliceCmd
	}
	var heads []*head
	for _, id := range saleIDs {
		ks, err := s.allKeys(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			heads = append(heads, &head{sale: id, stream: k.Outbox})
		}
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, h := range heads {
			h.cmd = p.XRangeN(ctx, h.stream, "-", "+", 1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the outboxes' oldest entries: %w", err)
	}
	out := map[int64]time.Time{}
	for _, h := range heads {
		msgs, err := h.cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read the outboxes' oldest entries: %w", err)
		}
		if len(msgs) == 0 {
			continue
		}
		at := admittedAt(msgs[0])
		if old, ok := out[h.sale]; !ok || at.Before(old) {
			out[h.sale] = at
		}
	}
	return out, nil
}

// admittedAt is when an outbox entry's claim was admitted: its t field,
// or else the time in its stream id (XADD '*': Redis' clock at the XADD).
func admittedAt(m redis.XMessage) time.Time {
	if t, ok := m.Values["t"].(string); ok {
		if ms, err := strconv.ParseInt(t, 10, 64); err == nil {
			return time.UnixMilli(ms)
		}
	}
	ms, _ := strconv.ParseInt(strings.SplitN(m.ID, "-", 2)[0], 10, 64)
	return time.UnixMilli(ms)
}
