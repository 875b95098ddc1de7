package tokenizer

import "unicode/utf8"

// chunkSize is the longest piece BPE runs on as a whole. A longer
// pre-token is cut into consecutive chunks of at most chunkSize bytes, each
// ending at a UTF-8 character boundary, and each chunk is encoded on its
// own, so work and memory stay linear in the input however long the
// pre-token (see the package documentation). The oracle corpus's pieces of
// varied text, random words of up to 3,909 bytes, need no cut (with 1 KB
// chunks one of them encodes differently). Its longer pieces repeat one to
// three characters (4,000 CJK characters, "éèê" 1,000 times, 2,000 emoji,
// 10,000 spaces), and their tokens line up with the cuts.
const chunkSize = 4096

// heapThreshold is the piece length from which bpe switches from the
// quadratic scan to the heap-based merge loop.
const heapThreshold = 16

// scratch holds reusable working memory for one encoding call.
type scratch struct {
	ids   []int32
	ranks []int32
	// heap variant
	next, prev []int32
	heap       []uint64
}

// bpe emits the token ids of piece (a pre-token, as raw bytes), cut into
// chunks of at most chunkSize bytes. Within a chunk, merges are applied one
// at a time, always the pair with the lowest rank, leftmost on ties:
// exactly the reference encoder's order.
func (e *encoder) bpe(piece string) {
	for len(piece) > chunkSize {
		cut := chunkSize
		for cut > chunkSize-utf8.UTFMax && !utf8.RuneStart(piece[cut]) {
			cut--
		}
		e.bpePiece(piece[:cut])
		piece = piece[cut:]
	}
	e.bpePiece(piece)
}

// bpePiece is bpe on a piece of at most chunkSize bytes.
func (e *encoder) bpePiece(piece string) {
	m := e.m
	switch len(piece) {
	case 0:
		return
	case 1:
		e.emit(m.byteToken[piece[0]])
		return
	case 2:
		// One possible merge: cheaper than the whole-token lookup.
		l, r := m.byteToken[piece[0]], m.byteToken[piece[1]]
		if rank := m.merges.rank(l, r); rank != noRank {
			e.emit(m.base + rank)
		} else {
			e.emit(l)
			e.emit(r)
		}
		return
	}
	if id, ok := m.whole.find(m, piece); ok {
		e.emit(id)
		return
	}
	if len(piece) >= heapThreshold {
		e.bpeHeap(piece)
		return
	}
	e.bpeQuadratic(piece)
}

// bpeQuadratic rescans all pairs after every merge: the fastest loop for
// the short pieces that make up most text.
func (e *encoder) bpeQuadratic(piece string) {
	m := e.m
	st := &e.st
	ids := st.ids[:0]
	ranks := st.ranks[:0]
	for i := 0; i < len(piece); i++ {
		ids = append(ids, m.byteToken[piece[i]])
	}
	for i := 0; i+1 < len(ids); i++ {
		ranks = append(ranks, m.merges.rank(ids[i], ids[i+1]))
	}
	for len(ranks) > 0 {
		best, at := noRank, -1
		for i, r := range ranks {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		ids[at] = m.base + best
		copy(ids[at+1:], ids[at+2:])
		ids = ids[:len(ids)-1]
		copy(ranks[at:], ranks[at+1:])
		ranks = ranks[:len(ranks)-1]
		if at > 0 {
			ranks[at-1] = m.merges.rank(ids[at-1], ids[at])
		}
		if at < len(ranks) {
			ranks[at] = m.merges.rank(ids[at], ids[at+1])
		}
	}
	for _, id := range ids {
		e.emit(id)
	}
	st.ids, st.ranks = ids, ranks
}

// bpeHeap is bpe for long pieces: a doubly linked list of parts and a
// min-heap of (rank, position) candidates with lazy invalidation, so the
// cost is O(n log n) instead of O(n²).
func (e *encoder) bpeHeap(piece string) {
	m := e.m
	st := &e.st
	n := len(piece)
	ids := grow32(st.ids, n)
	ranks := grow32(st.ranks, n)
	next := grow32(st.next, n)
	prev := grow32(st.prev, n)
	h := st.heap[:0]
	for i := range n {
		ids[i] = m.byteToken[piece[i]]
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		r := m.merges.rank(ids[i], ids[i+1])
		ranks[i] = r
		if r != noRank {
			h = heapPush(h, uint64(r)<<32|uint64(i))
		}
	}
	ranks[n-1] = noRank
	for len(h) > 0 {
		var top uint64
		top, h = heapPop(h)
		r, at := int32(top>>32), int32(uint32(top))
		if ranks[at] != r {
			continue // stale: the pair at this position changed
		}
		nx := next[at]
		ids[at] = m.base + r
		ranks[nx] = noRank
		nn := next[nx]
		next[at] = nn
		if nn >= 0 {
			prev[nn] = at
			ranks[at] = m.merges.rank(ids[at], ids[nn])
			if ranks[at] != noRank {
				h = heapPush(h, uint64(ranks[at])<<32|uint64(at))
			}
		} else {
			ranks[at] = noRank
		}
		if p := prev[at]; p >= 0 {
			ranks[p] = m.merges.rank(ids[p], ids[at])
			if ranks[p] != noRank {
				h = heapPush(h, uint64(ranks[p])<<32|uint64(p))
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		e.emit(ids[i])
	}
	st.ids, st.ranks, st.next, st.prev, st.heap = ids, ranks, next, prev, h
}

func grow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, n+n/4)
	}
	return s[:n]
}

func heapPush(h []uint64, v uint64) []uint64 {
	h = append(h, v)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= v {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = v
	return h
}

func heapPop(h []uint64) (uint64, []uint64) {
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	n := len(h)
	if n == 0 {
		return top, h
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if last <= h[c] {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = last
	return top, h
}
