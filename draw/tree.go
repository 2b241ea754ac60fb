package draw

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"sync"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The entries tree (docs/API.md "A draw nobody can bias"): when the lobby
// closes, the sorted entry lines are committed by their RFC 6962 Merkle
// tree hash, entries_root, and each entrant gets an inclusion proof of
// their line. A lobby can hold a million entries and every entrant may
// ask for a proof, so a proof must not read them all: at close the tree
// is summarised in chunks of ChunkSize consecutive leaves, aligned so that
// each full chunk is a perfect subtree of the RFC 6962 tree. The summary
// keeps each chunk's hash and first entry (48 bytes a chunk, 47 KB for a
// million entries); a proof's nodes above the chunks are hashed from the
// chunk hashes, the ones below from the lines of the chunk that holds
// them, read again and checked against its hash.

// ChunkSize is the number of leaves the summary keeps one hash for.
const ChunkSize = 1 << defaultChunkLevel

const defaultChunkLevel = 10

// chunkLevel is log2 of the chunk size NewTreeBuilder uses: ChunkSize's,
// except in tests, where small chunks cross many chunk boundaries in
// small trees. A Tree keeps its own.
var chunkLevel uint = defaultChunkLevel

// maxChunkLevel bounds a decoded tree's chunk level: a proof holds one
// chunk's leaf hashes in memory.
const maxChunkLevel = 20

var (
	hasher = rfc6962.DefaultHasher
	ranges = &compact.RangeFactory{Hash: hasher.HashChildren}
)

// Line is an entry's published line, without newline: `<entry hex> <sku>
// <quantity>`, its leaf in the tree.
func Line(entry []byte, sku string, quantity int) []byte {
	b := make([]byte, 0, 2*len(entry)+len(sku)+6)
	b = hex.AppendEncode(b, entry)
	b = append(b, ' ')
	b = append(b, sku...)
	b = append(b, ' ')
	return strconv.AppendInt(b, int64(quantity), 10)
}

// Root is the RFC 6962 root of lines (for small lists and tests).
func Root(lines [][]byte) [32]byte {
	r := ranges.NewEmptyRange(0)
	for _, l := range lines {
		mustAppend(r, hasher.HashLeaf(l))
	}
	return rootOf(r)
}

// rootOf is the RFC 6962 root of the leaves r covers from 0: the empty
// tree's is SHA-256 of nothing.
func rootOf(r *compact.Range) [32]byte {
	h, err := r.GetRootHash(nil)
	if err != nil {
		panic(fmt.Sprintf("merkle: %v", err)) // every range here begins at 0
	}
	if h == nil {
		h = hasher.EmptyRoot()
	}
	return [32]byte(h)
}

// rootRange is a compact range from leaf 0, as compact.Range keeps it
// (the roots of the perfect subtrees that cover the leaves, largest
// first), which allocates nothing per leaf: EntryList reads a million
// lines with nothing allocated per line, and the library's hasher
// allocates for every hash. The tests hold it to the library's root.
type rootRange struct {
	size  uint64
	nodes [][32]byte // one per bit set in size
	leaf  []byte     // the buffer a leaf is hashed from
}

// append adds line as the next leaf.
func (r *rootRange) append(line []byte) {
	r.leaf = append(append(r.leaf[:0], rfc6962.RFC6962LeafHashPrefix), line...)
	h := sha256.Sum256(r.leaf)
	// Each trailing one bit of size is a perfect subtree as large as the
	// one h has grown to: they merge.
	for s := r.size; s&1 == 1; s >>= 1 {
		h = hashChildren(r.nodes[len(r.nodes)-1], h)
		r.nodes = r.nodes[:len(r.nodes)-1]
	}
	r.nodes = append(r.nodes, h)
	r.size++
}

// root is the RFC 6962 root of the leaves added.
func (r *rootRange) root() [32]byte {
	if r.size == 0 {
		return sha256.Sum256(nil)
	}
	h := r.nodes[len(r.nodes)-1]
	for i := len(r.nodes) - 2; i >= 0; i-- {
		h = hashChildren(r.nodes[i], h)
	}
	return h
}

func hashChildren(l, r [32]byte) [32]byte {
	var b [1 + 2*32]byte
	b[0] = rfc6962.RFC6962NodeHashPrefix
	copy(b[1:], l[:])
	copy(b[33:], r[:])
	return sha256.Sum256(b[:])
}

// mustAppend appends one hash, which cannot fail on a range the package
// built itself (the library errs only on a corrupted range).
func mustAppend(r *compact.Range, hash []byte) {
	if err := r.Append(hash, nil); err != nil {
		panic(fmt.Sprintf("merkle: %v", err))
	}
}

// TreeBuilder computes the tree summary from the lines in ascending entry
// order, in one pass, with memory for one chunk's compact range and the
// summary.
type TreeBuilder struct {
	level  uint
	size   uint64
	chunk  *compact.Range // the current chunk's leaves, from its start
	hashes [][32]byte     // the full chunks'
	firsts [][EntrySize]byte
	last   [EntrySize]byte
}

// NewTreeBuilder returns a builder of an empty tree.
func NewTreeBuilder() *TreeBuilder {
	return &TreeBuilder{level: chunkLevel, chunk: ranges.NewEmptyRange(0)}
}

// Add takes the next entry and its line. It errs, and takes nothing, when
// entry is not EntrySize bytes, not after the previous entry (the lines
// must be strictly ascending, as published), or line is not that entry's
// (it must begin with the entry's hex and a space): the chunks' first
// entries must say which lines each chunk holds.
func (b *TreeBuilder) Add(entry []byte, line []byte) error {
	if len(entry) != EntrySize {
		return fmt.Errorf("entry of %d bytes, want %d", len(entry), EntrySize)
	}
	if b.size > 0 && bytes.Compare(entry, b.last[:]) <= 0 {
		return fmt.Errorf("entry %x after %x: the entries must be strictly ascending", entry, b.last)
	}
	var prefix [2*EntrySize + 1]byte
	hex.Encode(prefix[:], entry)
	prefix[2*EntrySize] = ' '
	if !bytes.HasPrefix(line, prefix[:]) {
		return fmt.Errorf("line %q is not entry %x's", clip(string(line)), entry)
	}
	if b.chunk.End() == 0 {
		b.firsts = append(b.firsts, [EntrySize]byte(entry))
	}
	mustAppend(b.chunk, hasher.HashLeaf(line))
	if b.chunk.End() == 1<<b.level {
		b.hashes = append(b.hashes, [32]byte(b.chunk.Hashes()[0]))
		b.chunk = ranges.NewEmptyRange(0)
	}
	b.last = [EntrySize]byte(entry)
	b.size++
	return nil
}

// Tree is the summary of the lines added so far; the builder can go on.
func (b *TreeBuilder) Tree() *Tree {
	t := &Tree{Size: b.size, level: b.level, hashes: slices.Clone(b.hashes), firsts: slices.Clone(b.firsts)}
	if b.chunk.End() > 0 {
		t.hashes = append(t.hashes, rootOf(b.chunk))
	}
	t.Root = t.rootFromChunks()
	return t
}

// Tree is a closed lobby's entries tree, summarised.
type Tree struct {
	Size uint64
	// Root is the RFC 6962 Merkle tree hash of all leaves: entries_root.
	// The empty tree's is SHA-256 of nothing.
	Root [32]byte

	level uint // log2 of its chunk size
	// hashes are the chunks' hashes: a full chunk's is its perfect
	// subtree's, the last chunk's, when partial, the RFC 6962 root of its
	// leaves alone.
	hashes [][32]byte
	firsts [][EntrySize]byte // the chunks' first entries, ascending

	// upper are the nodes above the chunks, hashed once, at the first
	// proof: upper[l][j] is the node over chunks j·2^l to (j+1)·2^l - 1
	// (only those over full chunks are perfect subtrees; no proof asks
	// for another).
	upperOnce sync.Once
	upper     [][][32]byte
}

// rootFromChunks is the tree's root from its chunk hashes: the chunks as
// the leaves of a tree whose last leaf is the partial chunk's root is the
// same tree, since RFC 6962 splits a tree at the largest power of two
// below its size, a multiple of the chunk size whenever there is more
// than one chunk.
func (t *Tree) rootFromChunks() [32]byte {
	r := ranges.NewEmptyRange(0)
	for _, h := range t.hashes {
		mustAppend(r, h[:])
	}
	return rootOf(r)
}

// Chunks is the number of chunks.
func (t *Tree) Chunks() int { return len(t.hashes) }

// ChunkSize is the number of leaves in each of the tree's chunks (the
// last may hold fewer): chunk c's first leaf is leaf c × ChunkSize.
func (t *Tree) ChunkSize() int { return 1 << t.level }

// ChunkFirst is chunk c's first entry (0 <= c < Chunks()): its lines are
// the entries from it on, ascending, up to ChunkSize of them (fewer in
// the last chunk).
func (t *Tree) ChunkFirst(c int) []byte { return slices.Clone(t.firsts[c][:]) }

// ChunkOf is the chunk that holds entry if it is in the tree (the last
// chunk whose first entry is at most entry); -1 if entry is before the
// first entry, or the tree is empty.
func (t *Tree) ChunkOf(entry []byte) int {
	c, found := slices.BinarySearchFunc(t.firsts, entry, func(f [EntrySize]byte, e []byte) int { return bytes.Compare(f[:], e) })
	if found {
		return c
	}
	return c - 1
}

// chunkLen is the number of leaves chunk c holds.
func (t *Tree) chunkLen(c int) int {
	start := uint64(c) << t.level
	return int(min(t.Size-start, 1<<t.level))
}

// Proof is the RFC 6962 inclusion proof (audit path, each hash 32 bytes)
// of leaf index. It reads the lines of only the chunks it needs (the
// leaf's, and the last one when partial) through lines(c), which must
// return exactly chunk c's lines, in order. It errs when index is not in
// the tree, lines fails, or a chunk read does not hash to the chunk hash
// kept: the entries changed after the tree was built.
func (t *Tree) Proof(index uint64, lines func(c int) ([][]byte, error)) ([][]byte, error) {
	read := make(map[int]*Chunk, 2)
	return t.ProofFrom(index, func(c int) (*Chunk, error) {
		if ch, ok := read[c]; ok {
			return ch, nil
		}
		ch, err := t.ReadChunk(c, lines)
		if err == nil {
			read[c] = ch
		}
		return ch, err
	})
}

// Chunk is one chunk of a tree with every node of its perfect subtrees
// hashed (2 × ChunkSize hashes, 64 KB): kept by a caller that gives many
// proofs (the API, to every entrant that asks), a proof is then a few
// lookups.
type Chunk struct {
	first  uint64       // its first leaf's index
	levels [][][32]byte // levels[0] the leaf hashes; levels[l][j] the node over 2^l leaves from first + j·2^l
}

// ReadChunk reads chunk c's lines through lines, checks them against the
// chunk's hash and hashes every node of its perfect subtrees.
func (t *Tree) ReadChunk(c int, lines func(c int) ([][]byte, error)) (*Chunk, error) {
	leaves, err := t.readChunk(c, lines)
	if err != nil {
		return nil, err
	}
	ch := &Chunk{first: uint64(c) << t.level, levels: [][][32]byte{make([][32]byte, len(leaves))}}
	for j, l := range leaves {
		ch.levels[0][j] = [32]byte(l)
	}
	for below := ch.levels[0]; len(below) > 1; below = ch.levels[len(ch.levels)-1] {
		up := make([][32]byte, len(below)/2)
		for j := range up {
			up[j] = [32]byte(hasher.HashChildren(below[2*j][:], below[2*j+1][:]))
		}
		ch.levels = append(ch.levels, up)
	}
	return ch, nil
}

// IndexOf is the leaf index of line in the tree if it is one of the
// chunk's leaves.
func (ch *Chunk) IndexOf(line []byte) (uint64, bool) {
	h := [32]byte(hasher.HashLeaf(line))
	j := slices.Index(ch.levels[0], h)
	return ch.first + uint64(j), j >= 0
}

// ProofFrom is Proof with the chunks given as read by ReadChunk.
func (t *Tree) ProofFrom(index uint64, chunk func(c int) (*Chunk, error)) ([][]byte, error) {
	nodes, err := proof.Inclusion(index, t.Size)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof: %w", err)
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		if id.Level >= t.level {
			hashes[i] = t.nodeFromChunks(id)
			continue
		}
		c := int(id.Index >> (t.level - id.Level))
		ch, err := chunk(c)
		if err != nil {
			return nil, err
		}
		begin, _ := id.Coverage()
		j := (begin - ch.first) >> id.Level
		if ch.first != uint64(c)<<t.level || int(id.Level) >= len(ch.levels) || j >= uint64(len(ch.levels[id.Level])) {
			return nil, fmt.Errorf("inclusion proof of leaf %d: chunk %d was not read from this tree", index, c)
		}
		h := ch.levels[id.Level][j]
		hashes[i] = h[:]
	}
	path, err := nodes.Rehash(hashes, hasher.HashChildren)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof of leaf %d: %w", index, err)
	}
	return path, nil
}

// nodeFromChunks is the hash of a node at or above the chunk level: a
// proof's nodes are perfect subtrees within the tree, so it covers full
// chunks only.
func (t *Tree) nodeFromChunks(id compact.NodeID) []byte {
	t.upperOnce.Do(func() {
		t.upper = [][][32]byte{t.hashes}
		for below := t.hashes; len(below) > 1; below = t.upper[len(t.upper)-1] {
			up := make([][32]byte, len(below)/2)
			for j := range up {
				up[j] = [32]byte(hasher.HashChildren(below[2*j][:], below[2*j+1][:]))
			}
			t.upper = append(t.upper, up)
		}
	})
	h := t.upper[id.Level-t.level][id.Index]
	return h[:]
}

// readChunk reads chunk c's lines and checks them against its hash; it
// returns their leaf hashes.
func (t *Tree) readChunk(c int, lines func(c int) ([][]byte, error)) ([][]byte, error) {
	ls, err := lines(c)
	if err != nil {
		return nil, fmt.Errorf("reading chunk %d: %w", c, err)
	}
	if want := t.chunkLen(c); len(ls) != want {
		return nil, fmt.Errorf("chunk %d has %d lines, the tree %d: the entries changed after the tree was built", c, len(ls), want)
	}
	leaves := make([][]byte, len(ls))
	r := ranges.NewEmptyRange(0)
	for j, l := range ls {
		leaves[j] = hasher.HashLeaf(l)
		mustAppend(r, leaves[j])
	}
	if rootOf(r) != t.hashes[c] {
		return nil, fmt.Errorf("chunk %d does not hash to the tree's: the entries changed after the tree was built", c)
	}
	return leaves, nil
}

// perfect is the root of the perfect subtree whose leaves (or nodes of
// one level) are hs, the first at index begin of its level.
func perfect(begin uint64, hs [][]byte) []byte {
	r := ranges.NewEmptyRange(begin)
	for _, h := range hs {
		mustAppend(r, h)
	}
	if got := r.Hashes(); len(got) == 1 {
		return got[0]
	}
	panic(fmt.Sprintf("merkle: %d nodes from %d are not one perfect subtree", len(hs), begin))
}

// VerifyInclusion checks an inclusion proof of line, leaf index of a tree
// of size leaves whose root is root (RFC 6962).
func VerifyInclusion(line []byte, index, size uint64, path [][]byte, root []byte) error {
	for i, h := range path {
		if len(h) != hasher.Size() {
			return fmt.Errorf("audit path hash %d is %d bytes, want %d", i, len(h), hasher.Size())
		}
	}
	if err := proof.VerifyInclusion(hasher, index, size, hasher.HashLeaf(line), path, root); err != nil {
		return fmt.Errorf("leaf %d of %d is not in the tree of root %x: %w", index, size, root, err)
	}
	return nil
}

// The summary's binary form, stored once per sale: a version byte, the
// chunk level (log2 of the chunk size), the size (8 bytes big-endian),
// the root, then per chunk its hash and its first entry, and last the
// CRC-32C of all before it. The checksum is what catches a size changed
// within its last chunk: the chunk hashes make the same root whatever
// the last chunk's length.
const (
	treeVersion     = 1
	treeHeaderSize  = 2 + 8 + 32
	treeChunkSize   = 32 + EntrySize
	treeTrailerSize = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes the summary (it never errs).
func (t *Tree) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, treeHeaderSize+len(t.hashes)*treeChunkSize+treeTrailerSize)
	b = append(b, treeVersion, byte(t.level))
	b = binary.BigEndian.AppendUint64(b, t.Size)
	b = append(b, t.Root[:]...)
	for c := range t.hashes {
		b = append(b, t.hashes[c][:]...)
		b = append(b, t.firsts[c][:]...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// UnmarshalTree decodes a summary MarshalBinary made. It errs on any
// other input: a checksum that does not match, a version or chunk level
// it does not know, a length that is not the size's, first entries not
// ascending, chunk hashes that do not make the root.
func UnmarshalTree(b []byte) (*Tree, error) {
	if len(b) < treeHeaderSize+treeTrailerSize {
		return nil, fmt.Errorf("entries tree: %d bytes, shorter than its header and checksum", len(b))
	}
	b, sum := b[:len(b)-treeTrailerSize], binary.BigEndian.Uint32(b[len(b)-treeTrailerSize:])
	if crc32.Checksum(b, castagnoli) != sum {
		return nil, errors.New("entries tree: its checksum does not match: corrupted")
	}
	if b[0] != treeVersion {
		return nil, fmt.Errorf("entries tree: version %d, want %d", b[0], treeVersion)
	}
	t := &Tree{level: uint(b[1]), Size: binary.BigEndian.Uint64(b[2:10]), Root: [32]byte(b[10:42])}
	if t.level > maxChunkLevel {
		return nil, fmt.Errorf("entries tree: chunks of 2^%d leaves, at most 2^%d", t.level, maxChunkLevel)
	}
	chunks := t.Size >> t.level
	if t.Size&(1<<t.level-1) != 0 {
		chunks++
	}
	body := b[treeHeaderSize:]
	if uint64(len(body))%treeChunkSize != 0 || uint64(len(body))/treeChunkSize != chunks {
		return nil, fmt.Errorf("entries tree: %d bytes of chunks, but %d leaves make %d chunks", len(body), t.Size, chunks)
	}
	if chunks > 0 { // nil otherwise, as the builder leaves them
		t.hashes = make([][32]byte, chunks)
		t.firsts = make([][EntrySize]byte, chunks)
	}
	for c := range t.hashes {
		at := body[c*treeChunkSize:]
		t.hashes[c] = [32]byte(at[:32])
		t.firsts[c] = [EntrySize]byte(at[32:treeChunkSize])
		if c > 0 && bytes.Compare(t.firsts[c][:], t.firsts[c-1][:]) <= 0 {
			return nil, fmt.Errorf("entries tree: chunk %d's first entry is not after chunk %d's", c, c-1)
		}
	}
	if t.rootFromChunks() != t.Root {
		return nil, errors.New("entries tree: the chunk hashes do not make its root")
	}
	return t, nil
}
