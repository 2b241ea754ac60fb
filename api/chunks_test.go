package api

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
)

// A chunk is read once while kept; a failed read is not kept; past max
// chunks the oldest goes.
func TestChunkCache_ReadsAChunkOnceAndKeepsAtMostMax(t *testing.T) {
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
	get(2, 0) // another sale's chunk 0
	require.Equal(t, 1, reads[chunkKey{2, 0}])

	_, err := cc.get(1, 1, func() (*draw.Chunk, error) { return nil, errors.New("database down") })
	require.Error(t, err)
	get(1, 1)
	require.Equal(t, 1, reads[chunkKey{1, 1}], "the failed read was not kept")
	get(1, 0) // dropped when (1, 1) came: the oldest
	require.Equal(t, 2, reads[chunkKey{1, 0}])
	require.Len(t, cc.lines, 2)
}
