package api

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
)

// A chunk is read once while kept; a failed read is not kept; past max
// chunks the least recently used goes, so a chunk every proof reads (the
// last, partial one) stays.
func TestChunkCache_ReadsAChunkOnceAndKeepsTheMostRecentlyUsed(t *testing.T) {
	cc := newChunkCache(2)
	reads := map[chunkKey]int{}
	chunks := map[chunkKey]*draw.Chunk{}
	get := func(sale int64, c int) *draw.Chunk {
		k := chunkKey{sale, c}
		if chunks[k] == nil {
			chunks[k] = &draw.Chunk{}
		}
		ch, err := cc.get(sale, c, func() (*draw.Chunk, error) {
			reads[k]++
			return chunks[k], nil
		})
		require.NoError(t, err)
		return ch
	}
	first := get(1, 0)
	require.Same(t, first, get(1, 0))
	require.Equal(t, 1, reads[chunkKey{1, 0}], "read once")

	_, err := cc.get(1, 1, func() (*draw.Chunk, error) { return nil, errors.New("database down") })
	require.Error(t, err)
	get(1, 1)
	require.Equal(t, 1, reads[chunkKey{1, 1}], "the failed read was not kept")

	// The last chunk (9) is read by every proof, between the others'.
	for _, c := range []int{9, 2, 9, 3, 9, 4, 9} {
		get(1, c)
	}
	require.Equal(t, 1, reads[chunkKey{1, 9}], "the most used chunk stays")
	require.Equal(t, 1, reads[chunkKey{1, 4}])
	get(1, 2) // dropped meanwhile
	require.Equal(t, 2, reads[chunkKey{1, 2}])
	require.Equal(t, 2, cc.lru.Len())
	get(2, 9) // another sale's chunk 9 is another chunk
	require.Equal(t, 1, reads[chunkKey{2, 9}])
}

// Requests that miss the same chunk at once read it once.
func TestChunkCache_ConcurrentMissesReadOnce(t *testing.T) {
	cc := newChunkCache(4)
	var reads atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cc.get(1, 0, func() (*draw.Chunk, error) {
				reads.Add(1)
				<-release
				return &draw.Chunk{}, nil
			})
			assert.NoError(t, err)
		}()
	}
	time.Sleep(50 * time.Millisecond) // the 16 requests are in
	close(release)
	wg.Wait()
	require.Equal(t, int64(1), reads.Load())
}
