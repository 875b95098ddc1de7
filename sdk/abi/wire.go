package abi

import (
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is matched (errors.Is) by every decoding error.
var ErrMalformed = errors.New("malformed frame")

// DecodeError reports why a message did not decode.
type DecodeError struct {
	Message string           // message type, as named in weir.proto
	Field   protowire.Number // 0 when the error is not about one field
	Reason  string
}

func (e *DecodeError) Error() string {
	s := "decode " + e.Message
	if e.Field != 0 {
		s += " field " + strconv.Itoa(int(e.Field))
	}
	return s + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// ---------------------------------------------------------------- encoding

func putVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func putInt64(b []byte, num protowire.Number, v int64) []byte {
	return putVarint(b, num, uint64(v))
}

// putInt64Always encodes v even when zero (optional fields).
func putInt64Always(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func putBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return putVarint(b, num, 1)
}

func putString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// putStringAlways encodes s even when empty (repeated elements).
func putStringAlways(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func putBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return putBytesAlways(b, num, v)
}

// putBytesAlways encodes v even when empty (optional and repeated fields).
func putBytesAlways(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// openMessage starts a length-delimited field whose length is not yet known;
// closeMessage fills it in. One byte is reserved for the length, which fits
// messages under 128 bytes; longer ones are shifted once.
func openMessage(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	start := len(b)
	return append(b, 0), start
}

func closeMessage(b []byte, start int) []byte {
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	for range size - 1 {
		b = append(b, 0)
	}
	copy(b[start+size:], b[start+1:start+1+n])
	protowire.AppendVarint(b[start:start], uint64(n))
	return b
}

func putPackedInt64(b []byte, num protowire.Number, vs []int64) []byte {
	if len(vs) == 0 {
		return b
	}
	return putPackedInt64Always(b, num, vs)
}

func putPackedInt64Always(b []byte, num protowire.Number, vs []int64) []byte {
	size := 0
	for _, v := range vs {
		size += protowire.SizeVarint(uint64(v))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, v := range vs {
		b = protowire.AppendVarint(b, uint64(v))
	}
	return b
}

func putPackedKinds(b []byte, num protowire.Number, vs []Kind) []byte {
	return putPackedUint32s(b, num, vs)
}

func putPackedUint32s[T ~uint32](b []byte, num protowire.Number, vs []T) []byte {
	if len(vs) == 0 {
		return b
	}
	size := 0
	for _, v := range vs {
		size += protowire.SizeVarint(uint64(v))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, v := range vs {
		b = protowire.AppendVarint(b, uint64(v))
	}
	return b
}

// ---------------------------------------------------------------- decoding

// decoder walks the fields of one message. The first error sticks; every
// accessor then returns zero values and next reports false.
type decoder struct {
	b   []byte
	msg string
	num protowire.Number
	typ protowire.Type
	err error
}

func (d *decoder) fail(reason string) {
	if d.err == nil {
		d.err = &DecodeError{Message: d.msg, Field: d.num, Reason: reason}
	}
}

func (d *decoder) next() bool {
	if d.err != nil || len(d.b) == 0 {
		return false
	}
	num, typ, n := protowire.ConsumeTag(d.b)
	if n < 0 {
		d.num = 0
		d.fail(parseError(n))
		return false
	}
	d.b = d.b[n:]
	d.num, d.typ = num, typ
	return true
}

func (d *decoder) wrongType() {
	d.fail("wrong wire type " + strconv.Itoa(int(d.typ)))
}

func (d *decoder) varint() uint64 {
	if d.typ != protowire.VarintType {
		d.wrongType()
		return 0
	}
	v, n := protowire.ConsumeVarint(d.b)
	if n < 0 {
		d.fail(parseError(n))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int64() int64   { return int64(d.varint()) }
func (d *decoder) uint32() uint32 { return uint32(d.varint()) }
func (d *decoder) bool() bool     { return d.varint() != 0 }

func (d *decoder) bytes() []byte {
	if d.typ != protowire.BytesType {
		d.wrongType()
		return nil
	}
	v, n := protowire.ConsumeBytes(d.b)
	if n < 0 {
		d.fail(parseError(n))
		return nil
	}
	d.b = d.b[n:]
	return v
}

// bytesPresent is bytes for fields whose presence matters: it never returns
// nil on success, so an empty value stays distinguishable from absence.
func (d *decoder) bytesPresent() []byte {
	v := d.bytes()
	if v == nil && d.err == nil {
		v = []byte{}
	}
	return v
}

func (d *decoder) string() string {
	v := d.bytes()
	if checkUTF8 && !utf8.Valid(v) {
		d.fail("invalid UTF-8 in string")
		return ""
	}
	return string(v)
}

// message decodes a length-delimited sub-message with dec.
func (d *decoder) message(dec func([]byte) error) {
	v := d.bytes()
	if d.err != nil {
		return
	}
	if err := dec(v); err != nil {
		d.err = err
	}
}

func (d *decoder) int64s(dst []int64) []int64 {
	switch d.typ {
	case protowire.VarintType:
		return append(dst, d.int64())
	case protowire.BytesType:
		p := d.bytes()
		dst = slices.Grow(dst, packedCount(p))
		for len(p) > 0 {
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				d.fail(parseError(n))
				return dst
			}
			dst = append(dst, int64(v))
			p = p[n:]
		}
		return dst
	}
	d.wrongType()
	return dst
}

func (d *decoder) kinds(dst []Kind) []Kind { return uint32s(d, dst) }

// uint32s decodes one element, or a packed run, of a repeated uint32 or
// enum field.
func uint32s[T ~uint32](d *decoder, dst []T) []T {
	switch d.typ {
	case protowire.VarintType:
		return append(dst, T(d.uint32()))
	case protowire.BytesType:
		p := d.bytes()
		dst = slices.Grow(dst, packedCount(p))
		for len(p) > 0 {
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				d.fail(parseError(n))
				return dst
			}
			dst = append(dst, T(uint32(v)))
			p = p[n:]
		}
		return dst
	}
	d.wrongType()
	return dst
}

func (d *decoder) skip() {
	n := protowire.ConsumeFieldValue(d.num, d.typ, d.b)
	if n < 0 {
		d.fail(parseError(n))
		return
	}
	d.b = d.b[n:]
}

// count returns how many times field num occurs in the message b, so that
// repeated fields are allocated once at their exact size. It stops quietly at
// malformed input; the decoding pass reports the error.
func count(b []byte, num protowire.Number) int {
	n := 0
	for len(b) > 0 {
		fn, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			return n
		}
		b = b[m:]
		m = protowire.ConsumeFieldValue(fn, typ, b)
		if m < 0 {
			return n
		}
		b = b[m:]
		if fn == num {
			n++
		}
	}
	return n
}

// reserve returns s emptied, with capacity for at least n elements.
func reserve[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// packedCount is the number of varints in a packed payload.
func packedCount(p []byte) int {
	n := 0
	for _, c := range p {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// parseError describes a negative protowire result code. The codes are
// spelled out here rather than taken from protowire.ParseError, whose text
// deliberately varies from run to run.
func parseError(n int) string {
	switch n {
	case -1:
		return "unexpected end of data"
	case -2:
		return "invalid field number"
	case -3:
		return "variable length integer overflow"
	case -4:
		return "reserved wire type"
	case -5:
		return "mismatching end group marker"
	case -6:
		return "exceeded maximum recursion depth"
	}
	return "invalid wire data"
}
