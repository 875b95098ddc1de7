package wasmbuild

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
)

// MaxDataGap is the longest run of zero bytes between two data segments
// that CompactData fills in to join them.
//
// The Go linker starts a new data segment after every run of more than 8
// zero bytes, which gives a Go guest tens of thousands of segments (about
// 55,000 in the first-party module, most of them under 32 bytes apart).
// The host's runtime decodes and copies each segment on its own, with an
// allocation per segment at every instance start; a few dozen zero bytes
// cost nothing to copy by comparison.
const MaxDataGap = 64

// CompactData returns the module with its data segments joined wherever
// less than MaxDataGap zero bytes lie between them. The initial memory is
// byte for byte the same: linear memory starts zeroed, and the gaps are
// filled with zeros. It returns the module unchanged unless every segment
// is active in memory 0 at a constant offset, no two overlap, and there is
// no data count section (which only modules using memory.init or data.drop
// need), which is how the Go linker writes them.
func CompactData(wasm []byte) ([]byte, error) {
	const dataSection, dataCountSection = 11, 12
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("wasmbuild: not a WebAssembly module")
	}
	out := slices.Clip(wasm[:8])
	for p := 8; p < len(wasm); {
		start := p
		id := wasm[p]
		p++
		size, n := binary.Uvarint(wasm[p:])
		if n <= 0 || size > uint64(len(wasm)-p-n) {
			return nil, errors.New("wasmbuild: malformed section header")
		}
		p += n
		body := wasm[p : p+int(size)]
		p += int(size)
		switch id {
		case dataCountSection:
			return wasm, nil
		case dataSection:
			segs, ok := activeSegments(body)
			if !ok {
				return wasm, nil
			}
			sec := encodeSegments(joinSegments(segs))
			out = append(out, dataSection)
			out = binary.AppendUvarint(out, uint64(len(sec)))
			out = append(out, sec...)
		default:
			out = append(out, wasm[start:p]...)
		}
	}
	return out, nil
}

type segment struct {
	offset uint32
	data   []byte
}

// activeSegments decodes a data section whose segments are all active in
// memory 0 at an i32.const offset; ok is false for anything else.
func activeSegments(body []byte) (segs []segment, ok bool) {
	p := 0
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(body[p:])
		if n <= 0 {
			return 0, false
		}
		p += n
		return v, true
	}
	count, ok := uvarint()
	if !ok || count > uint64(len(body)) {
		return nil, false
	}
	for range count {
		// flag 0, i32.const OFFSET, end, size, bytes
		if flag, ok := uvarint(); !ok || flag != 0 || p >= len(body) || body[p] != 0x41 {
			return nil, false
		}
		p++
		offset, n := varint32(body[p:])
		if n <= 0 || p+n >= len(body) || body[p+n] != 0x0b {
			return nil, false
		}
		p += n + 1
		size, ok := uvarint()
		if !ok || size > uint64(len(body)-p) {
			return nil, false
		}
		segs = append(segs, segment{offset: uint32(offset), data: body[p : p+int(size)]})
		p += int(size)
	}
	if p != len(body) {
		return nil, false
	}
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.offset, b.offset) })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].offset) < uint64(segs[i-1].offset)+uint64(len(segs[i-1].data)) {
			return nil, false // overlapping segments: their order matters
		}
	}
	return segs, true
}

// joinSegments joins sorted, disjoint segments at most MaxDataGap apart.
func joinSegments(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			end := uint64(last.offset) + uint64(len(last.data))
			if gap := uint64(s.offset) - end; gap <= MaxDataGap {
				last.data = append(last.data, make([]byte, gap)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		out = append(out, segment{offset: s.offset, data: slices.Clone(s.data)})
	}
	return out
}

func encodeSegments(segs []segment) []byte {
	b := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, 0, 0x41)
		b = appendVarint32(b, int32(s.offset))
		b = append(b, 0x0b)
		b = binary.AppendUvarint(b, uint64(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

// varint32 decodes a signed LEB128 i32 (the i32.const immediate).
func varint32(b []byte) (int32, int) {
	var v int64
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		c := b[i]
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return int32(v), i + 1
		}
	}
	return 0, -1
}

func appendVarint32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
