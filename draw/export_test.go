package draw

import (
	"math/bits"
	"testing"
)

// SetChunkSize makes NewTreeBuilder use chunks of n leaves, a power of
// two, until the test ends: small chunks cross many chunk boundaries in
// small trees. Tests that call it must not run in parallel.
func SetChunkSize(t testing.TB, n int) {
	t.Helper()
	if n < 1 || n&(n-1) != 0 {
		t.Fatalf("chunk size %d is not a power of two", n)
	}
	old := chunkLevel
	chunkLevel = uint(bits.TrailingZeros(uint(n)))
	t.Cleanup(func() { chunkLevel = old })
}
