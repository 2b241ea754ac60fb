package api

import (
	"container/list"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill/draw"
)

// chunkCache keeps the entries' tree chunks that inclusion proofs read
// (GET /lobby/me), each with its nodes hashed (draw.Chunk): once a lobby
// is committed its entries never change, and every entrant asks for their
// proof again at each poll, so a chunk is read from the database and
// hashed once, not at every poll (a proof is then 6 µs, not 1 ms). It
// holds at most max chunks (64 KB each), the least recently used dropped
// first, so the last chunk, which most proofs read, stays; the requests
// that miss the same chunk at once read it once.
type chunkCache struct {
	mu    sync.Mutex
	max   int
	byKey map[chunkKey]*list.Element // of *cachedChunk
	lru   *list.List                 // most recently used first
	reads singleflight.Group
}

type chunkKey struct {
	sale  int64
	chunk int
}

type cachedChunk struct {
	key   chunkKey
	chunk *draw.Chunk
}

// maxCachedChunks bounds the proofs' cache: 1,024 chunks of 64 KB, 64 MB,
// every chunk of a lobby of a million entries.
const maxCachedChunks = 1024

func newChunkCache(max int) *chunkCache {
	return &chunkCache{max: max, byKey: make(map[chunkKey]*list.Element), lru: list.New()}
}

// get returns chunk c of sale's tree from the cache, or read's, kept if
// read succeeds.
func (cc *chunkCache) get(sale int64, c int, read func() (*draw.Chunk, error)) (*draw.Chunk, error) {
	k := chunkKey{sale, c}
	if ch, ok := cc.lookup(k); ok {
		return ch, nil
	}
	v, err, _ := cc.reads.Do(strconv.FormatInt(sale, 10)+"/"+strconv.Itoa(c), func() (any, error) {
		if ch, ok := cc.lookup(k); ok {
			return ch, nil
		}
		ch, err := read()
		if err != nil {
			return nil, err
		}
		cc.keep(k, ch)
		return ch, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*draw.Chunk), nil
}

func (cc *chunkCache) lookup(k chunkKey) (*draw.Chunk, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	el, ok := cc.byKey[k]
	if !ok {
		return nil, false
	}
	cc.lru.MoveToFront(el)
	return el.Value.(*cachedChunk).chunk, true
}

func (cc *chunkCache) keep(k chunkKey, ch *draw.Chunk) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.byKey[k]; ok {
		return
	}
	if cc.lru.Len() >= cc.max {
		oldest := cc.lru.Back()
		cc.lru.Remove(oldest)
		delete(cc.byKey, oldest.Value.(*cachedChunk).key)
	}
	cc.byKey[k] = cc.lru.PushFront(&cachedChunk{key: k, chunk: ch})
}
