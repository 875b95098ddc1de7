package tokenizer

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

//go:embed data/deepseek_v3.bin.gz
var deepseekData []byte

// dataMagic starts the embedded data; keep in sync with internal/gen.
const dataMagic = "WEIRBPE1"

// Ids are below 2^17; merge keys pack two ids.
const (
	idBits = 17
	idMask = 1<<idBits - 1
)

// model is the immutable encoder state shared by all users of a Tokenizer.
type model struct {
	// tokens holds the bytes of every id: id is tokens[off[id]:off[id+1]].
	// Vocabulary entries hold their raw bytes (the byte-level alphabet
	// decoded), added tokens their UTF-8 text; unused ids are empty.
	tokens []byte
	off    []uint32

	byteToken [256]int32 // id of each single-byte token
	base      int32      // merge rank r yields id base+r
	merges    mergeTable
	whole     wholeTable

	added      map[string]int32     // added token content → id
	addedFirst [256]bool            // first bytes of added tokens
	addedOnly  byte                 // the only first byte when all share one, else 0
	addedLens  []int                // distinct added-token lengths, longest first
	addedPair  [1 << 16 / 64]uint64 // bitset of the first two bytes of added tokens
	addedShort bool                 // some added token is a single byte
	special    map[int32]bool
}

// mergeTable maps a pair of token ids to its merge rank with open
// addressing. A slot packs (left<<17|right)<<17|rank; emptySlot is free.
type mergeTable struct {
	slots []uint64
	shift uint
}

const (
	emptySlot = ^uint64(0)
	noRank    = int32(1<<31 - 1)
)

func tableBits(n int) uint {
	bits := uint(4)
	for 1<<bits < 2*n {
		bits++
	}
	return bits
}

func newMergeTable(n int) mergeTable {
	bits := tableBits(n)
	slots := make([]uint64, 1<<bits)
	for i := range slots {
		slots[i] = emptySlot
	}
	return mergeTable{slots: slots, shift: 64 - bits}
}

func mergeHash(key uint64, shift uint) uint64 {
	return (key * 0x9E3779B97F4A7C15) >> shift
}

func (t *mergeTable) insert(l, r, rank int32) {
	key := uint64(l)<<idBits | uint64(r)
	mask := uint64(len(t.slots) - 1)
	for h := mergeHash(key, t.shift); ; h = (h + 1) & mask {
		if t.slots[h] == emptySlot {
			t.slots[h] = key<<idBits | uint64(rank)
			return
		}
	}
}

// rank returns the merge rank of the pair (l, r), or noRank.
func (t *mergeTable) rank(l, r int32) int32 {
	key := uint64(l)<<idBits | uint64(r)
	mask := uint64(len(t.slots) - 1)
	for h := mergeHash(key, t.shift); ; h = (h + 1) & mask {
		e := t.slots[h]
		if e>>idBits == key {
			return int32(e & idMask)
		}
		if e == emptySlot {
			return noRank
		}
	}
}

// wholeTable finds the merge result whose bytes equal a whole pre-token,
// for the tokens BPE rebuilds whole from their own bytes. A slot holds 15
// bits of the key's hash above id+1 (0 marks a free slot), so most misses
// are rejected without touching the token bytes.
type wholeTable struct {
	slots  []uint32
	mask   uint64
	maxLen int
}

const wholeTagShift = idBits

// pieceHash hashes a pre-token for the whole-token table. The table's keys
// are fixed (the vocabulary), so a fixed hash cannot be turned against it.
func pieceHash(s string) uint64 {
	const k = 0x9E3779B97F4A7C15
	h := uint64(len(s)) * k
	for len(s) >= 8 {
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = (h ^ v) * k
		h ^= h >> 31
		s = s[8:]
	}
	if len(s) > 0 {
		var v uint64
		for i := 0; i < len(s); i++ {
			v |= uint64(s[i]) << (8 * i)
		}
		h = (h ^ v) * k
	}
	h ^= h >> 29
	h *= k
	return h ^ h>>32
}

func (w *wholeTable) find(m *model, piece string) (int32, bool) {
	if len(piece) > w.maxLen {
		return 0, false
	}
	h := pieceHash(piece)
	tag := uint32(h >> (64 - (32 - wholeTagShift)))
	for i := h & w.mask; ; i = (i + 1) & w.mask {
		s := w.slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>wholeTagShift != tag {
			continue
		}
		if id := s&idMask - 1; string(m.tokens[m.off[id]:m.off[id+1]]) == piece {
			return int32(id), true
		}
	}
}

func (w *wholeTable) insert(m *model, id int32) {
	tok := m.tokens[m.off[id]:m.off[id+1]]
	w.maxLen = max(w.maxLen, len(tok))
	h := pieceHash(string(tok))
	tag := uint32(h >> (64 - (32 - wholeTagShift)))
	for i := h & w.mask; ; i = (i + 1) & w.mask {
		if w.slots[i] == 0 {
			w.slots[i] = tag<<wholeTagShift | uint32(id+1)
			return
		}
	}
}

type dataReader struct {
	b   []byte
	err error
}

func (d *dataReader) uvarint(what string) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > 1<<31 {
		d.err = fmt.Errorf("malformed %s", what)
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *dataReader) bytes(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.err = fmt.Errorf("truncated %s", what)
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

// loadModel parses the embedded data written by internal/gen.
func loadModel(gz []byte) (*model, error) {
	m, err := parseModel(gz)
	if err != nil {
		return nil, fmt.Errorf("tokenizer data: %w", err)
	}
	return m, nil
}

func parseModel(gz []byte) (*model, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if !bytes.HasPrefix(raw, []byte(dataMagic)) {
		return nil, errors.New("bad magic")
	}
	d := &dataReader{b: raw[len(dataMagic):]}

	base := d.uvarint("base count")
	baseBytes := make([][]byte, base)
	for id := range base {
		baseBytes[id] = d.bytes(d.uvarint("base token length"), "base token")
	}
	nMerges := d.uvarint("merge count")
	planes := d.bytes(6*nMerges, "merge operands")
	wholeBits := d.bytes((nMerges+7)/8, "whole-token bitmap")
	nAdded := d.uvarint("added token count")
	type addedTok struct {
		id      int
		content string
		special bool
	}
	added := make([]addedTok, 0, nAdded)
	for range nAdded {
		id := d.uvarint("added token id")
		content := string(d.bytes(d.uvarint("added token length"), "added token"))
		flag := d.bytes(1, "added token flag")
		if d.err != nil {
			return nil, d.err
		}
		if content == "" || id > idMask {
			return nil, fmt.Errorf("bad added token %d %q", id, content)
		}
		added = append(added, addedTok{id, content, flag[0] == 1})
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	vocabSize := base + nMerges
	if vocabSize >= idMask { // id+1 must fit the whole table's slots
		return nil, fmt.Errorf("%d ids do not fit %d bits", vocabSize, idBits)
	}
	operand := func(which, i int) int {
		p := planes[which*3*nMerges:]
		return int(p[i]) | int(p[nMerges+i])<<8 | int(p[2*nMerges+i])<<16
	}

	// Lay out every id's bytes: lengths first, then one allocation.
	maxID := vocabSize - 1
	for _, a := range added {
		maxID = max(maxID, a.id)
	}
	contents := make([]string, maxID+1)
	for _, a := range added {
		contents[a.id] = a.content
	}
	size := make([]uint32, maxID+1)
	for id, b := range baseBytes {
		size[id] = uint32(len(b))
	}
	for r := range nMerges {
		l, rt, id := operand(0, r), operand(1, r), base+r
		if l >= id || rt >= id || contents[l] != "" || contents[rt] != "" {
			return nil, fmt.Errorf("merge %d has a bad operand", r)
		}
		size[id] = size[l] + size[rt]
	}
	m := &model{base: int32(base)}
	m.off = make([]uint32, maxID+2)
	total := uint32(0)
	for id := range size {
		m.off[id] = total
		if contents[id] != "" {
			total += uint32(len(contents[id]))
		} else {
			total += size[id]
		}
	}
	m.off[maxID+1] = total
	m.tokens = make([]byte, total)
	for id, b := range baseBytes {
		if contents[id] == "" {
			copy(m.tokens[m.off[id]:], b)
		}
	}
	m.merges = newMergeTable(nMerges)
	for r := range nMerges {
		l, rt, id := operand(0, r), operand(1, r), base+r
		at := m.off[id]
		at += uint32(copy(m.tokens[at:], m.tokens[m.off[l]:m.off[l+1]]))
		copy(m.tokens[at:], m.tokens[m.off[rt]:m.off[rt+1]])
		m.merges.insert(int32(l), int32(rt), int32(r))
	}
	for id, c := range contents {
		if c != "" {
			copy(m.tokens[m.off[id]:], c)
		}
	}

	for b := range m.byteToken {
		m.byteToken[b] = -1
	}
	for id, b := range baseBytes {
		if len(b) == 1 && contents[id] == "" {
			m.byteToken[b[0]] = int32(id)
		}
	}
	for b, id := range m.byteToken {
		if id < 0 {
			return nil, fmt.Errorf("byte %#x has no token", b)
		}
	}

	nWhole := 0
	for r := range nMerges {
		if wholeBits[r/8]&(1<<(r%8)) != 0 {
			nWhole++
		}
	}
	bits := tableBits(nWhole)
	m.whole = wholeTable{slots: make([]uint32, 1<<bits), mask: 1<<bits - 1}
	for r := range nMerges {
		if wholeBits[r/8]&(1<<(r%8)) != 0 {
			m.whole.insert(m, int32(base+r))
		}
	}

	m.added = make(map[string]int32, len(added))
	m.special = make(map[int32]bool)
	seen := map[int]bool{}
	first := -1
	for _, a := range added {
		m.added[a.content] = int32(a.id)
		if a.special {
			m.special[int32(a.id)] = true
		}
		c := a.content[0]
		m.addedFirst[c] = true
		switch first {
		case -1:
			first = int(c)
		case int(c):
		default:
			first = -2
		}
		if len(a.content) == 1 {
			m.addedShort = true
		} else {
			p := int(c)<<8 | int(a.content[1])
			m.addedPair[p/64] |= 1 << (p % 64)
		}
		if !seen[len(a.content)] {
			seen[len(a.content)] = true
			m.addedLens = append(m.addedLens, len(a.content))
		}
	}
	if first > 0 {
		m.addedOnly = byte(first)
	}
	slices.Sort(m.addedLens)
	slices.Reverse(m.addedLens)
	return m, nil
}

// token returns the bytes of id, or nil when id is unknown.
func (m *model) token(id int) []byte {
	if id < 0 || id+1 >= len(m.off) {
		return nil
	}
	return m.tokens[m.off[id]:m.off[id+1]]
}
