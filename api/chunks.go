package api

import "sync"

// chunkCache keeps the lines of the entries' tree chunks that inclusion
// proofs read (GET /lobby/me): once a lobby is committed its entries
// never change, and every entrant asks for their proof again at each
// poll, so a chunk is read from the database once, not at every poll.
// It holds at most max chunks (1,024 lines each), the oldest dropped
// first.
type chunkCache struct {
	mu    sync.Mutex
	max   int
	lines map[chunkKey][][]byte
	order []chunkKey
}

type chunkKey struct {
	sale  int64
	chunk int
}

// maxCachedChunks bounds the proofs' cache: 256 chunks of 1,024 lines of
// about 45 bytes, some 12 MB, the chunks of a lobby of 262,144 entries.
const maxCachedChunks = 256

func newChunkCache(max int) *chunkCache {
	return &chunkCache{max: max, lines: make(map[chunkKey][][]byte)}
}

// get returns chunk c of sale's tree from the cache, or read's lines,
// kept if read succeeds.
func (cc *chunkCache) get(sale int64, c int, read func() ([][]byte, error)) ([][]byte, error) {
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
