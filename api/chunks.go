package api

import (
	"sync"

	"github.com/seckill/seckill/draw"
)

// chunkCache keeps the entries' tree chunks that inclusion proofs read
// (GET /lobby/me), each with its nodes hashed (draw.Chunk): once a lobby
// is committed its entries never change, and every entrant asks for their
// proof again at each poll, so a chunk is read from the database and
// hashed once, not at every poll (a proof is then 6 µs, not 1 ms). It
// holds at most max chunks (64 KB each), the oldest dropped first.
type chunkCache struct {
	mu    sync.Mutex
	max   int
	lines map[chunkKey]*draw.Chunk
	order []chunkKey
}

type chunkKey struct {
	sale  int64
	chunk int
}

// maxCachedChunks bounds the proofs' cache: 256 chunks of 64 KB, 16 MB,
// the chunks of a lobby of 262,144 entries.
const maxCachedChunks = 256

func newChunkCache(max int) *chunkCache {
	return &chunkCache{max: max, lines: make(map[chunkKey]*draw.Chunk)}
}

// get returns chunk c of sale's tree from the cache, or read's, kept if
// read succeeds.
func (cc *chunkCache) get(sale int64, c int, read func() (*draw.Chunk, error)) (*draw.Chunk, error) {
	k := chunkKey{sale, c}
	cc.mu.Lock()
	l, ok := cc.lines[k]
	cc.mu.Unlock()
	if ok {
		return l, nil
	}
	l, err := read()
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.lines[k]; !ok {
		if len(cc.order) >= cc.max {
			delete(cc.lines, cc.order[0])
			cc.order = cc.order[1:]
		}
		cc.lines[k] = l
		cc.order = append(cc.order, k)
	}
	return l, nil
}
