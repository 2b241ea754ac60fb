package draw_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
)

// treeCase is a sorted entry list and its published lines.
type treeCase struct {
	entries [][]byte
	lines   [][]byte
}

// newTreeCase draws n distinct entries, sorted, from seed, each with one
// of a few items.
func newTreeCase(n int, seed uint64) treeCase {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	seen := make(map[[draw.EntrySize]byte]bool, n)
	entries := make([][]byte, 0, n)
	for len(entries) < n {
		var e [draw.EntrySize]byte
		for i := range e {
			e[i] = byte(rng.Uint32())
		}
		if !seen[e] {
			seen[e] = true
			entries = append(entries, e[:])
		}
	}
	slices.SortFunc(entries, bytes.Compare)
	skus := []string{"default", "eu-42", "x.l_1"}
	lines := make([][]byte, n)
	for i, e := range entries {
		lines[i] = draw.Line(e, skus[i%len(skus)], 1+i%3)
	}
	return treeCase{entries: entries, lines: lines}
}

func (tc treeCase) tree(t testing.TB) *draw.Tree {
	t.Helper()
	b := draw.NewTreeBuilder()
	for i := range tc.entries {
		require.NoError(t, b.Add(tc.entries[i], tc.lines[i]))
	}
	return b.Tree()
}

// chunks reads chunk c's lines as a caller would, from the chunk's first
// entry on, up to chunk lines; it records each chunk read.
func (tc treeCase) chunks(tr *draw.Tree, chunk int, read *[]int) func(c int) ([][]byte, error) {
	return func(c int) ([][]byte, error) {
		*read = append(*read, c)
		from, _ := slices.BinarySearchFunc(tc.entries, tr.ChunkFirst(c), bytes.Compare)
		return tc.lines[from:min(from+chunk, len(tc.lines))], nil
	}
}

// mth is RFC 6962's MTH, section 2.1, as written there.
func mth(d [][]byte) []byte {
	switch n := len(d); n {
	case 0:
		s := sha256.Sum256(nil)
		return s[:]
	case 1:
		s := sha256.Sum256(append([]byte{0x00}, d[0]...))
		return s[:]
	default:
		k := split(n)
		s := sha256.Sum256(slices.Concat([]byte{0x01}, mth(d[:k]), mth(d[k:])))
		return s[:]
	}
}

// path is RFC 6962's PATH(m, D[n]), section 2.1.1, as written there.
func path(m int, d [][]byte) [][]byte {
	n := len(d)
	if n == 1 {
		return nil
	}
	k := split(n)
	if m < k {
		return append(path(m, d[:k]), mth(d[k:]))
	}
	return append(path(m-k, d[k:]), mth(d[:k]))
}

// split is the largest power of two smaller than n (n > 1).
func split(n int) int {
	k := 1
	for 2*k < n {
		k *= 2
	}
	return k
}

// checkProof checks leaf i's proof against RFC 6962's PATH and with
// VerifyInclusion, and that it read at most two chunks, each once: the
// leaf's and the last.
func checkProof(t *testing.T, tc treeCase, tr *draw.Tree, chunk, i int) {
	t.Helper()
	var read []int
	p, err := tr.Proof(uint64(i), tc.chunks(tr, chunk, &read))
	require.NoError(t, err)
	want := path(i, tc.lines)
	if want == nil {
		want = [][]byte{}
	}
	require.Equal(t, want, p, "leaf %d of %d", i, len(tc.lines))
	require.NoError(t, draw.VerifyInclusion(tc.lines[i], uint64(i), uint64(len(tc.lines)), p, tr.Root[:]))
	slices.Sort(read)
	require.Equal(t, len(read), len(slices.Compact(slices.Clone(read))), "a chunk read twice: %v", read)
	for _, c := range read {
		require.True(t, c == i/chunk || c == tr.Chunks()-1, "leaf %d of %d read chunk %d", i, len(tc.lines), c)
	}
}

func TestTree_IsRFC6962sForEverySizeAndLeaf(t *testing.T) {
	for _, chunk := range []int{1, 4, 8} {
		draw.SetChunkSize(t, chunk)
		for n := range 71 {
			tc := newTreeCase(n, uint64(chunk))
			tr := tc.tree(t)
			require.Equal(t, uint64(n), tr.Size)
			require.Equal(t, (n+chunk-1)/chunk, tr.Chunks())
			require.Equal(t, mth(tc.lines), tr.Root[:], "size %d, chunk %d", n, chunk)
			require.Equal(t, draw.Root(tc.lines), tr.Root)
			for i := range n {
				checkProof(t, tc, tr, chunk, i)
			}
		}
	}
}

func TestTree_IsRFC6962sWithItsChunkSize(t *testing.T) {
	for _, n := range []int{1023, 1024, 1025, 3000} {
		tc := newTreeCase(n, 1)
		tr := tc.tree(t)
		require.Equal(t, mth(tc.lines), tr.Root[:], "size %d", n)
		rng := rand.New(rand.NewPCG(uint64(n), 0))
		leaves := []int{0, n - 1, 1022, 1023, 1024, 2047, 2048, 2999}
		for range 4 {
			leaves = append(leaves, rng.IntN(n))
		}
		for _, i := range leaves {
			if i < n {
				checkProof(t, tc, tr, draw.ChunkSize, i)
			}
		}
	}
}

func TestRoot_OfNothingIsSHA256OfNothing(t *testing.T) {
	require.Equal(t, sha256.Sum256(nil), draw.Root(nil))
	require.Equal(t, sha256.Sum256(nil), draw.NewTreeBuilder().Tree().Root)
	require.Equal(t, sha256.Sum256(nil), draw.NewEntryList(0).Root())
}

func TestVerifyInclusion_FailsWhenAnythingIsTampered(t *testing.T) {
	draw.SetChunkSize(t, 4)
	tc := newTreeCase(37, 7)
	tr := tc.tree(t)
	n, root := uint64(37), tr.Root[:]
	flip := func(b []byte, at int) []byte {
		b = slices.Clone(b)
		b[at] ^= 1
		return b
	}
	// A size is bound by its root, published with it: a leaf's proof
	// also computes that root for the other sizes of the same shape
	// (33..64 for leaf 17 of 37), so the sizes tampered with here change
	// the shape of the leaf's path.
	for i, sizes := range map[uint64][]uint64{17: {16, 32, 65, 1 << 40}, 35: {36, 32}, 36: {36, 38, 64}} {
		var read []int
		p, err := tr.Proof(i, tc.chunks(tr, 4, &read))
		require.NoError(t, err)
		line := tc.lines[i]
		require.NoError(t, draw.VerifyInclusion(line, i, n, p, root))

		require.Error(t, draw.VerifyInclusion(flip(line, len(line)-1), i, n, p, root), "leaf %d: line", i)
		require.Error(t, draw.VerifyInclusion(tc.lines[(i+1)%n], i, n, p, root), "leaf %d: another leaf's line", i)
		require.Error(t, draw.VerifyInclusion(line, i-1, n, p, root), "leaf %d: index", i)
		require.Error(t, draw.VerifyInclusion(line, i+1, n, p, root), "leaf %d: index", i)
		require.Error(t, draw.VerifyInclusion(line, n, n, p, root), "leaf %d: index past the size", i)
		for _, size := range sizes {
			require.Error(t, draw.VerifyInclusion(line, i, size, p, root), "leaf %d: size %d", i, size)
		}
		for j := range p {
			q := slices.Clone(p)
			q[j] = flip(q[j], j%32)
			require.Error(t, draw.VerifyInclusion(line, i, n, q, root), "leaf %d: path element %d", i, j)
		}
		require.Error(t, draw.VerifyInclusion(line, i, n, p[:len(p)-1], root), "leaf %d: path cut short", i)
		require.Error(t, draw.VerifyInclusion(line, i, n, append(slices.Clone(p), p[0]), root), "leaf %d: path too long", i)
		require.Error(t, draw.VerifyInclusion(line, i, n, append([][]byte{p[0][:31]}, p[1:]...), root), "leaf %d: a short path hash", i)
		require.Error(t, draw.VerifyInclusion(line, i, n, p, flip(root, 0)), "leaf %d: root", i)
		require.Error(t, draw.VerifyInclusion(line, i, n, p, root[:31]), "leaf %d: a short root", i)
	}
}

func TestTree_ProofFailsWhenAChunkChanged(t *testing.T) {
	draw.SetChunkSize(t, 4)
	tc := newTreeCase(22, 3)
	tr := tc.tree(t)
	chunkOf := func(c int) [][]byte { return tc.lines[4*c : min(4*c+4, len(tc.lines))] }
	for name, lines := range map[string]func(c int) [][]byte{
		"a line changed": func(c int) [][]byte {
			ls := slices.Clone(chunkOf(c))
			ls[1] = slices.Clone(ls[1])
			ls[1][len(ls[1])-1] ^= 1
			return ls
		},
		"a line dropped":  func(c int) [][]byte { return chunkOf(c)[1:] },
		"a line added":    func(c int) [][]byte { return append(slices.Clone(chunkOf(c)), tc.lines[0]) },
		"lines reordered": func(c int) [][]byte { ls := slices.Clone(chunkOf(c)); ls[0], ls[1] = ls[1], ls[0]; return ls },
		"another chunk":   func(c int) [][]byte { return chunkOf((c + 1) % 4) },
	} {
		for _, i := range []uint64{0, 9, 21} {
			_, err := tr.Proof(i, func(c int) ([][]byte, error) { return lines(c), nil })
			require.ErrorContains(t, err, "changed after the tree was built", "%s, leaf %d", name, i)
		}
	}
	boom := errors.New("boom")
	_, err := tr.Proof(5, func(int) ([][]byte, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	_, err = tr.Proof(22, func(c int) ([][]byte, error) { return chunkOf(c), nil })
	require.Error(t, err, "a leaf past the size")
}

func TestTree_ChunkOfIsTheChunkThatHoldsTheEntry(t *testing.T) {
	draw.SetChunkSize(t, 4)
	tc := newTreeCase(10, 5)
	tr := tc.tree(t)
	require.Equal(t, 3, tr.Chunks())
	for i, e := range tc.entries {
		require.Equal(t, i/4, tr.ChunkOf(e), "entry %d", i)
		require.Equal(t, tc.entries[i/4*4], tr.ChunkFirst(tr.ChunkOf(e)))
	}
	before := slices.Clone(tc.entries[0])
	before[draw.EntrySize-1]--
	require.Equal(t, -1, tr.ChunkOf(before))
	after := bytes.Repeat([]byte{0xff}, draw.EntrySize)
	require.Equal(t, 2, tr.ChunkOf(after))
	require.Equal(t, -1, draw.NewTreeBuilder().Tree().ChunkOf(after))
}

func TestTree_SurvivesMarshalling(t *testing.T) {
	draw.SetChunkSize(t, 4)
	for _, n := range []int{0, 1, 4, 5, 70} {
		tc := newTreeCase(n, 11)
		tr := tc.tree(t)
		b, err := tr.MarshalBinary()
		require.NoError(t, err)
		got, err := draw.UnmarshalTree(b)
		require.NoError(t, err, "size %d", n)
		require.Equal(t, tr, got, "size %d", n)
		again, err := got.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, b, again)
		for i := range n {
			checkProof(t, tc, got, 4, i)
		}
	}
}

func TestUnmarshalTree_RejectsMalformedInput(t *testing.T) {
	draw.SetChunkSize(t, 4)
	tr := newTreeCase(10, 13).tree(t) // 3 chunks
	good, err := tr.MarshalBinary()
	require.NoError(t, err)
	const header, chunk = 42, 48 // then 4 bytes of checksum
	require.Len(t, good, header+3*chunk+4)
	_, err = draw.UnmarshalTree(good)
	require.NoError(t, err)

	// Every byte changed is caught, by the checksum at least.
	for at := range good {
		_, err := draw.UnmarshalTree(flipAt(good, at))
		require.Error(t, err, "byte %d changed", at)
	}
	// With the checksum made right again, what the encoding itself
	// rules out.
	body := good[:len(good)-4]
	with := func(change func(b []byte) []byte) []byte { return sealed(change(slices.Clone(body))) }
	for name, b := range map[string][]byte{
		"nothing":             nil,
		"a checksum alone":    sealed(nil),
		"a header cut short":  sealed(body[:header-1]),
		"a chunk cut short":   sealed(body[:len(body)-1]),
		"a chunk missing":     sealed(body[:len(body)-chunk]),
		"a byte more":         with(func(b []byte) []byte { return append(b, 0) }),
		"a chunk more":        with(func(b []byte) []byte { return append(b, b[len(b)-chunk:]...) }),
		"another version":     with(func(b []byte) []byte { b[0] = 2; return b }),
		"another chunk level": with(func(b []byte) []byte { b[1] = 3; return b }),
		"a huge chunk level":  with(func(b []byte) []byte { b[1] = 64; return b }),
		"a size of 2^64-1":    with(func(b []byte) []byte { copy(b[2:10], bytes.Repeat([]byte{0xff}, 8)); return b }),
		"a size a chunk more": with(func(b []byte) []byte { b[9] += 4; return b }),
		"another root":        with(func(b []byte) []byte { b[10] ^= 1; return b }),
		"a chunk hash changed": with(func(b []byte) []byte {
			b[header+chunk] ^= 1
			return b
		}),
		"first entries out of order": with(func(b []byte) []byte {
			f1, f2 := b[header+chunk+32:header+2*chunk], b[header+2*chunk+32:header+3*chunk]
			tmp := slices.Clone(f1)
			copy(f1, f2)
			copy(f2, tmp)
			return b
		}),
		"a first entry repeated": with(func(b []byte) []byte {
			copy(b[header+2*chunk+32:header+3*chunk], b[header+chunk+32:header+2*chunk])
			return b
		}),
	} {
		_, err := draw.UnmarshalTree(b)
		require.Error(t, err, name)
	}
}

func flipAt(b []byte, at int) []byte {
	b = slices.Clone(b)
	b[at] ^= 1
	return b
}

// sealed is b with the CRC-32C the encoding ends with.
func sealed(b []byte) []byte {
	return binary.BigEndian.AppendUint32(slices.Clone(b), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func TestTreeBuilder_RefusesWhatIsNotTheNextEntry(t *testing.T) {
	tc := newTreeCase(3, 17)
	e0, e1, e2 := tc.entries[0], tc.entries[1], tc.entries[2]
	b := draw.NewTreeBuilder()
	require.NoError(t, b.Add(e0, tc.lines[0]))
	require.NoError(t, b.Add(e1, tc.lines[1]))
	require.ErrorContains(t, b.Add(e1, tc.lines[1]), "strictly ascending", "the same entry again")
	require.ErrorContains(t, b.Add(e0, tc.lines[0]), "strictly ascending", "an entry before the last")
	require.Error(t, b.Add(e2[:draw.EntrySize-1], tc.lines[2]), "a short entry")
	require.Error(t, b.Add(append(slices.Clone(e2), 0), tc.lines[2]), "a long entry")
	require.Error(t, b.Add(e2, tc.lines[1]), "another entry's line")
	require.Error(t, b.Add(e2, tc.lines[2][:2*draw.EntrySize]), "a line of the entry alone")
	require.NoError(t, b.Add(e2, tc.lines[2]), "a refusal takes nothing")
	require.Equal(t, tc.tree(t), b.Tree())
}

func TestLine_IsThePublishedLine(t *testing.T) {
	e := bytes.Repeat([]byte{0xab}, draw.EntrySize)
	require.Equal(t, strings.Repeat("ab", draw.EntrySize)+" eu-42 2", string(draw.Line(e, "eu-42", 2)))
	l := draw.EntriesOf(string(draw.Line(e, "eu-42", 100)))
	require.Equal(t, 1, l.Len(), "well-formed")
}

func TestEntryList_RootIsTheRootOfTheLinesAsPublished(t *testing.T) {
	tc := newTreeCase(23, 19)
	lines := slices.Clone(tc.lines)
	// What the root commits to is the list as published, malformed
	// lines included.
	lines[3] = []byte("not an entry")
	lines[7] = []byte{}
	lines[9] = append(slices.Clone(lines[9]), " trailing"...)
	strs := make([]string, len(lines))
	for i, l := range lines {
		strs[i] = string(l)
	}
	want := draw.Root(lines)
	require.Equal(t, mth(lines), want[:])

	require.Equal(t, want, draw.EntriesOf(strs...).Root())
	for _, body := range []string{strings.Join(strs, "\n") + "\n", strings.Join(strs, "\n")} {
		l, err := draw.ReadEntries(strings.NewReader(body), 0)
		require.NoError(t, err)
		require.Equal(t, int64(len(lines)), l.Lines())
		require.Equal(t, want, l.Root())
	}

	// A "\r" before the newline is part of the line published: the
	// root is over it, while the entry still parses.
	crlf, err := draw.ReadEntries(strings.NewReader(strings.Join(strs, "\r\n")+"\r\n"), 0)
	require.NoError(t, err)
	withCR := make([][]byte, len(lines))
	for i, l := range lines {
		withCR[i] = append(slices.Clone(l), '\r')
	}
	require.Equal(t, draw.Root(withCR), crlf.Root())
	require.NotEqual(t, want, crlf.Root())
	require.Equal(t, len(lines)-3, crlf.Len(), "the well-formed lines still parse")

	// After every line, the root of the lines so far: a root asked for
	// midway does not disturb the ones after it.
	long := newTreeCase(70, 23)
	grown := draw.NewEntryList(0)
	for n := range 71 {
		root := grown.Root()
		require.Equal(t, mth(long.lines[:n]), root[:], "after %d lines", n)
		if n < 70 {
			grown.Add(string(long.lines[n]))
		}
	}

	// The tree of the well-formed lines is the one the list's root is
	// of, when every line is well-formed.
	all := make([]string, len(tc.lines))
	for i, l := range tc.lines {
		all[i] = string(l)
	}
	require.Equal(t, tc.tree(t).Root, draw.EntriesOf(all...).Root())
}

// The figures at 1,000,000 entries: building the summary at close, and
// the root `seckill draw verify` computes over the published list.
const benchEntries = 1_000_000

func BenchmarkTree_1M(b *testing.B) {
	tc := newTreeCase(benchEntries, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t := draw.NewTreeBuilder()
		for i := range tc.entries {
			if err := t.Add(tc.entries[i], tc.lines[i]); err != nil {
				b.Fatal(err)
			}
		}
		if t.Tree().Chunks() != (benchEntries+draw.ChunkSize-1)/draw.ChunkSize {
			b.Fatal("wrong number of chunks")
		}
	}
}

func BenchmarkEntryList_Root_1M(b *testing.B) {
	tc := newTreeCase(benchEntries, 1)
	var body bytes.Buffer
	for _, l := range tc.lines {
		body.Write(l)
		body.WriteByte('\n')
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, err := draw.ReadEntries(bytes.NewReader(body.Bytes()), benchEntries)
		if err != nil {
			b.Fatal(err)
		}
		if r := l.Root(); r == ([32]byte{}) {
			b.Fatal(fmt.Sprintf("root %x", r))
		}
	}
}

// BenchmarkTree_Proof is one entrant's inclusion proof in a tree of
// 1,000,000 entries: from the chunks' lines (Proof), and from chunks read
// once and kept (ProofFrom, as the API keeps them): the CPU a GET
// /lobby/me pays after the commit.
func BenchmarkTree_Proof(b *testing.B) {
	tc := newTreeCase(benchEntries, 1)
	tr := tc.tree(b)
	lines := func(c int) ([][]byte, error) {
		start := c * draw.ChunkSize
		return tc.lines[start:min(start+draw.ChunkSize, len(tc.lines))], nil
	}
	b.Run("from lines", func(b *testing.B) {
		i := uint64(0)
		for b.Loop() {
			if _, err := tr.Proof(i%benchEntries, lines); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
	})
	b.Run("from kept chunks", func(b *testing.B) {
		kept := map[int]*draw.Chunk{}
		chunk := func(c int) (*draw.Chunk, error) {
			if ch, ok := kept[c]; ok {
				return ch, nil
			}
			ch, err := tr.ReadChunk(c, lines)
			kept[c] = ch
			return ch, err
		}
		for i := range uint64(tr.Chunks()) { // every chunk read once, before
			if _, err := tr.ProofFrom(i*draw.ChunkSize, chunk); err != nil {
				b.Fatal(err)
			}
		}
		i := uint64(0)
		for b.Loop() {
			if _, err := tr.ProofFrom(i%benchEntries, chunk); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
	})
}

// Proofs from chunks read once and kept (ProofFrom, as the API gives
// them) are the proofs Proof gives, for every leaf of trees that cross
// many chunks, and a chunk of another tree is refused.
func TestTree_ProofFromKeptChunksIsProof(t *testing.T) {
	draw.SetChunkSize(t, 4)
	for _, n := range []int{1, 3, 4, 5, 17, 64, 70} {
		tc := newTreeCase(n, 3)
		tr := tc.tree(t)
		lines := func(c int) ([][]byte, error) { return tc.lines[c*4 : min(c*4+4, n)], nil }
		kept := map[int]*draw.Chunk{}
		chunk := func(c int) (*draw.Chunk, error) {
			if kept[c] == nil {
				ch, err := tr.ReadChunk(c, lines)
				require.NoError(t, err)
				kept[c] = ch
			}
			return kept[c], nil
		}
		for i := range uint64(n) {
			want, err := tr.Proof(i, lines)
			require.NoError(t, err)
			got, err := tr.ProofFrom(i, chunk)
			require.NoError(t, err)
			require.Equal(t, want, got, "size %d leaf %d", n, i)
			require.NoError(t, draw.VerifyInclusion(tc.lines[i], i, uint64(n), got, tr.Root[:]))
		}
		if n >= 8 {
			wrong := func(int) (*draw.Chunk, error) { return kept[0], nil } // chunk 0 for every chunk
			_, err := tr.ProofFrom(5, wrong)                                // leaf 5's sibling is leaf 4, in chunk 1
			require.Error(t, err, "size %d", n)
		}
	}
}
