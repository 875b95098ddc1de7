package otlp

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The encoder writes the OTLP protobuf messages directly with protowire,
// field by field in the order the reference implementation (Go's
// protobuf module) writes them, field-number order with the member of a
// oneof last; proto3 rules, so a scalar at its zero value and an empty repeated
// field are left out, a member of a oneof and an optional field are
// written whenever set, and an embedded message whenever present, empty
// or not. The field numbers are those of the opentelemetry-proto files
// (opentelemetry/proto/{common,resource,trace,metrics}/v1); the tests hold
// the output to the reference encoding byte for byte.

// buf appends protobuf fields.
type buf []byte

// msg writes field n as an embedded message that fn writes. The message
// is written in place and its length put in front of it once known.
func (b *buf) msg(n protowire.Number, fn func()) {
	*b = protowire.AppendTag(*b, n, protowire.BytesType)
	start := len(*b)
	fn()
	size := len(*b) - start
	var l [10]byte
	lb := protowire.AppendVarint(l[:0], uint64(size))
	*b = append(*b, lb...)
	copy((*b)[start+len(lb):], (*b)[start:start+size])
	copy((*b)[start:], lb)
}

// str writes a string field unless it is empty.
func (b *buf) str(n protowire.Number, s string) {
	if s != "" {
		b.strAlways(n, s)
	}
}

// strAlways writes a string field even when it is empty (a oneof member).
func (b *buf) strAlways(n protowire.Number, s string) {
	*b = protowire.AppendTag(*b, n, protowire.BytesType)
	*b = protowire.AppendString(*b, s)
}

// bytes writes a bytes field unless it is empty.
func (b *buf) bytes(n protowire.Number, v []byte) {
	if len(v) > 0 {
		*b = protowire.AppendTag(*b, n, protowire.BytesType)
		*b = protowire.AppendBytes(*b, v)
	}
}

// varint writes an unsigned varint field (uint32, uint64, enum) unless 0.
func (b *buf) varint(n protowire.Number, v uint64) {
	if v != 0 {
		b.varintAlways(n, v)
	}
}

// varintAlways writes a varint field even when it is 0 (a oneof member).
func (b *buf) varintAlways(n protowire.Number, v uint64) {
	*b = protowire.AppendTag(*b, n, protowire.VarintType)
	*b = protowire.AppendVarint(*b, v)
}

// sint32 writes a zigzag-encoded sint32 field unless 0.
func (b *buf) sint32(n protowire.Number, v int32) {
	b.varint(n, protowire.EncodeZigZag(int64(v)))
}

// fixed32 writes a fixed32 field unless 0.
func (b *buf) fixed32(n protowire.Number, v uint32) {
	if v != 0 {
		*b = protowire.AppendTag(*b, n, protowire.Fixed32Type)
		*b = protowire.AppendFixed32(*b, v)
	}
}

// fixed64 writes a fixed64 field (fixed64, sfixed64) unless 0.
func (b *buf) fixed64(n protowire.Number, v uint64) {
	if v != 0 {
		b.fixed64Always(n, v)
	}
}

// fixed64Always writes a fixed64 field even when it is 0 (a oneof member,
// an optional field that is set).
func (b *buf) fixed64Always(n protowire.Number, v uint64) {
	*b = protowire.AppendTag(*b, n, protowire.Fixed64Type)
	*b = protowire.AppendFixed64(*b, v)
}

// double writes a double field unless it is +0 (a negative zero is not
// the default value, and is written).
func (b *buf) double(n protowire.Number, v float64) {
	b.fixed64(n, math.Float64bits(v))
}

// optDouble writes an optional double field when v is set.
func (b *buf) optDouble(n protowire.Number, v *float64) {
	if v != nil {
		b.fixed64Always(n, math.Float64bits(*v))
	}
}

// packedFixed64 writes a packed repeated fixed64 field unless empty.
func (b *buf) packedFixed64(n protowire.Number, vs []uint64) {
	if len(vs) == 0 {
		return
	}
	*b = protowire.AppendTag(*b, n, protowire.BytesType)
	*b = protowire.AppendVarint(*b, uint64(8*len(vs)))
	for _, v := range vs {
		*b = protowire.AppendFixed64(*b, v)
	}
}

// packedDouble writes a packed repeated double field unless empty.
func (b *buf) packedDouble(n protowire.Number, vs []float64) {
	if len(vs) == 0 {
		return
	}
	*b = protowire.AppendTag(*b, n, protowire.BytesType)
	*b = protowire.AppendVarint(*b, uint64(8*len(vs)))
	for _, v := range vs {
		*b = protowire.AppendFixed64(*b, math.Float64bits(v))
	}
}

// packedVarint writes a packed repeated uint64 field unless empty.
func (b *buf) packedVarint(n protowire.Number, vs []uint64) {
	if len(vs) == 0 {
		return
	}
	size := 0
	for _, v := range vs {
		size += protowire.SizeVarint(v)
	}
	*b = protowire.AppendTag(*b, n, protowire.BytesType)
	*b = protowire.AppendVarint(*b, uint64(size))
	for _, v := range vs {
		*b = protowire.AppendVarint(*b, v)
	}
}
