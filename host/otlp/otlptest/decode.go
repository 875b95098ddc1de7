// Package otlptest decodes the OTLP/HTTP protobuf requests an exporter
// sends, for tests that receive them on a loopback collector. It is a
// strict reader written from the opentelemetry-proto files (common,
// resource, trace and metrics v1): a field number the message does not
// define, a wire type other than the field's, a malformed length or a
// oneof set twice is an error naming the message, so an encoder cannot
// pass by writing something a collector would misread or drop. It reads
// the fields an exporter of this project writes (no exemplars, summaries
// or entity references) and keeps them in plain structs.
package otlptest

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The message types mirror OTLP's of the same names, with the fields this
// project's exporters write.

// Export is the body of an export request: the items (spans or metrics)
// grouped by resource, then by instrumentation scope (OTLP's
// ResourceSpans and ScopeSpans, or ResourceMetrics and ScopeMetrics).
type Export[T any] struct{ Resources []*ResourceGroup[T] }

// TracesData is the body of a trace export (ExportTraceServiceRequest).
type TracesData = Export[Span]

// MetricsData is the body of a metric export (ExportMetricsServiceRequest).
type MetricsData = Export[Metric]

type ResourceGroup[T any] struct {
	Resource  *Resource
	Scopes    []*ScopeGroup[T]
	SchemaURL string
}

type ScopeGroup[T any] struct {
	Scope     *Scope
	Items     []*T
	SchemaURL string
}

type Resource struct{ Attributes []*KeyValue }

type Scope struct {
	Name, Version string
	Attributes    []*KeyValue
}

// Span kinds and status codes, as OTLP numbers them.
const (
	KindInternal = 1
	KindServer   = 2
	KindClient   = 3
	StatusOK     = 1
	StatusError  = 2
)

type Span struct {
	TraceID, SpanID, ParentSpanID                  []byte
	TraceState, Name                               string
	Kind                                           uint64
	StartTimeUnixNano, EndTimeUnixNano             uint64
	Attributes                                     []*KeyValue
	DroppedAttributes, DroppedEvents, DroppedLinks uint64
	Events                                         []*Event
	Links                                          []*Link
	Status                                         *Status
	Flags                                          uint32
}

type Event struct {
	TimeUnixNano      uint64
	Name              string
	Attributes        []*KeyValue
	DroppedAttributes uint64
}

type Link struct {
	TraceID, SpanID   []byte
	TraceState        string
	Attributes        []*KeyValue
	DroppedAttributes uint64
	Flags             uint32
}

type Status struct {
	Message string
	Code    uint64
}

type KeyValue struct {
	Key   string
	Value *AnyValue
}

// AnyValue holds the one member of its oneof that was set, named by Kind:
// "string", "bool", "int", "double" or "array".
type AnyValue struct {
	Kind   string
	String string
	Bool   bool
	Int    int64
	Double float64
	Array  []*AnyValue
}

// Attr returns the value of key among kvs, nil when it is not there.
func Attr(kvs []*KeyValue, key string) *AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// Metric holds the one kind of data that was set.
type Metric struct {
	Name, Description, Unit string
	Gauge                   *Gauge
	Sum                     *Sum
	Histogram               *Histogram
	ExponentialHistogram    *ExponentialHistogram
}

// Aggregation temporalities, as OTLP numbers them.
const (
	TemporalityDelta      = 1
	TemporalityCumulative = 2
)

type Gauge struct{ DataPoints []*NumberDataPoint }

type Sum struct {
	DataPoints  []*NumberDataPoint
	Temporality uint64
	IsMonotonic bool
}

// Series is the shape Histogram and ExponentialHistogram share: data
// points (field 1) and their aggregation temporality (field 2).
type Series[P any] struct {
	DataPoints  []*P
	Temporality uint64
}

type Histogram = Series[HistogramDataPoint]

type ExponentialHistogram = Series[ExponentialHistogramDataPoint]

// NumberDataPoint holds as_double or as_int, whichever was set.
type NumberDataPoint struct {
	Attributes                      []*KeyValue
	StartTimeUnixNano, TimeUnixNano uint64
	AsDouble                        *float64
	AsInt                           *int64
}

type HistogramDataPoint struct {
	Attributes                      []*KeyValue
	StartTimeUnixNano, TimeUnixNano uint64
	Count                           uint64
	Sum, Min, Max                   *float64
	BucketCounts                    []uint64
	ExplicitBounds                  []float64
}

type ExponentialHistogramDataPoint struct {
	Attributes                      []*KeyValue
	StartTimeUnixNano, TimeUnixNano uint64
	Count, ZeroCount                uint64
	Sum, Min, Max                   *float64
	Scale                           int32
	ZeroThreshold                   float64
	Positive, Negative              *Buckets
}

type Buckets struct {
	Offset int32
	Counts []uint64
}

// DecodeTraces reads a trace export body.
func DecodeTraces(b []byte) (*TracesData, error) {
	return decodeExport(b, [...]string{"TracesData", "ResourceSpans", "ScopeSpans", "Span"}, span)
}

// DecodeMetrics reads a metric export body.
func DecodeMetrics(b []byte) (*MetricsData, error) {
	return decodeExport(b, [...]string{"MetricsData", "ResourceMetrics", "ScopeMetrics", "Metric"}, metric)
}

// decodeExport reads the nesting traces and metrics share: field 1 of the
// body repeats a resource group of a Resource (1), scope groups (2) and a
// schema URL (3); a scope group is an InstrumentationScope (1), items (2)
// that item reads, and a schema URL (3). names are the four messages'.
func decodeExport[T any](b []byte, names [4]string, item func(*T) func(field) error) (*Export[T], error) {
	e := &Export[T]{}
	return e, walk(b, names[0], func(f field) error {
		if f.num != 1 {
			return f.unknown()
		}
		rg := &ResourceGroup[T]{}
		e.Resources = append(e.Resources, rg)
		return f.msg(names[1], func(f field) error {
			switch f.num {
			case 1:
				rg.Resource = &Resource{}
				return f.msg("Resource", resource(rg.Resource))
			case 2:
				sg := &ScopeGroup[T]{}
				rg.Scopes = append(rg.Scopes, sg)
				return f.msg(names[2], func(f field) error {
					switch f.num {
					case 1:
						sg.Scope = &Scope{}
						return f.msg("InstrumentationScope", scope(sg.Scope))
					case 2:
						it := new(T)
						sg.Items = append(sg.Items, it)
						return f.msg(names[3], item(it))
					case 3:
						return f.str(&sg.SchemaURL)
					}
					return f.unknown()
				})
			case 3:
				return f.str(&rg.SchemaURL)
			}
			return f.unknown()
		})
	})
}

func span(sp *Span) func(field) error {
	return func(f field) error {
		switch f.num {
		case 1:
			return f.bytes(&sp.TraceID)
		case 2:
			return f.bytes(&sp.SpanID)
		case 3:
			return f.str(&sp.TraceState)
		case 4:
			return f.bytes(&sp.ParentSpanID)
		case 5:
			return f.str(&sp.Name)
		case 6:
			return f.varint(&sp.Kind)
		case 7:
			return f.fixed64(&sp.StartTimeUnixNano)
		case 8:
			return f.fixed64(&sp.EndTimeUnixNano)
		case 9:
			return f.attr(&sp.Attributes)
		case 10:
			return f.varint(&sp.DroppedAttributes)
		case 11:
			ev := &Event{}
			sp.Events = append(sp.Events, ev)
			return f.msg("Span.Event", func(f field) error {
				switch f.num {
				case 1:
					return f.fixed64(&ev.TimeUnixNano)
				case 2:
					return f.str(&ev.Name)
				case 3:
					return f.attr(&ev.Attributes)
				case 4:
					return f.varint(&ev.DroppedAttributes)
				}
				return f.unknown()
			})
		case 12:
			return f.varint(&sp.DroppedEvents)
		case 13:
			l := &Link{}
			sp.Links = append(sp.Links, l)
			return f.msg("Span.Link", func(f field) error {
				switch f.num {
				case 1:
					return f.bytes(&l.TraceID)
				case 2:
					return f.bytes(&l.SpanID)
				case 3:
					return f.str(&l.TraceState)
				case 4:
					return f.attr(&l.Attributes)
				case 5:
					return f.varint(&l.DroppedAttributes)
				case 6:
					return f.fixed32(&l.Flags)
				}
				return f.unknown()
			})
		case 14:
			return f.varint(&sp.DroppedLinks)
		case 15:
			sp.Status = &Status{}
			return f.msg("Status", func(f field) error {
				switch f.num {
				case 2:
					return f.str(&sp.Status.Message)
				case 3:
					return f.varint(&sp.Status.Code)
				}
				return f.unknown()
			})
		case 16:
			return f.fixed32(&sp.Flags)
		}
		return f.unknown()
	}
}

func metric(m *Metric) func(field) error {
	data := func(f field) error {
		if m.Gauge != nil || m.Sum != nil || m.Histogram != nil || m.ExponentialHistogram != nil {
			return f.errorf("the data oneof is set twice")
		}
		return nil
	}
	return func(f field) error {
		switch f.num {
		case 1:
			return f.str(&m.Name)
		case 2:
			return f.str(&m.Description)
		case 3:
			return f.str(&m.Unit)
		case 5:
			if err := data(f); err != nil {
				return err
			}
			m.Gauge = &Gauge{}
			return f.msg("Gauge", func(f field) error {
				if f.num != 1 {
					return f.unknown()
				}
				dp := &NumberDataPoint{}
				m.Gauge.DataPoints = append(m.Gauge.DataPoints, dp)
				return f.msg("NumberDataPoint", number(dp))
			})
		case 7:
			if err := data(f); err != nil {
				return err
			}
			m.Sum = &Sum{}
			return f.msg("Sum", func(f field) error {
				switch f.num {
				case 1:
					dp := &NumberDataPoint{}
					m.Sum.DataPoints = append(m.Sum.DataPoints, dp)
					return f.msg("NumberDataPoint", number(dp))
				case 2:
					return f.varint(&m.Sum.Temporality)
				case 3:
					var v uint64
					err := f.varint(&v)
					m.Sum.IsMonotonic = v != 0
					return err
				}
				return f.unknown()
			})
		case 9:
			if err := data(f); err != nil {
				return err
			}
			m.Histogram = &Histogram{}
			return series(f, "Histogram", "HistogramDataPoint", m.Histogram, histogram)
		case 10:
			if err := data(f); err != nil {
				return err
			}
			m.ExponentialHistogram = &ExponentialHistogram{}
			return series(f, "ExponentialHistogram", "ExponentialHistogramDataPoint", m.ExponentialHistogram, expHistogram)
		}
		return f.unknown()
	}
}

// series reads field f as a Series of data points that point reads.
func series[P any](f field, name, pointName string, s *Series[P], point func(*P) func(field) error) error {
	return f.msg(name, func(f field) error {
		switch f.num {
		case 1:
			dp := new(P)
			s.DataPoints = append(s.DataPoints, dp)
			return f.msg(pointName, point(dp))
		case 2:
			return f.varint(&s.Temporality)
		}
		return f.unknown()
	})
}

func number(dp *NumberDataPoint) func(field) error {
	return func(f field) error {
		switch f.num {
		case 2:
			return f.fixed64(&dp.StartTimeUnixNano)
		case 3:
			return f.fixed64(&dp.TimeUnixNano)
		case 4, 6:
			if dp.AsDouble != nil || dp.AsInt != nil {
				return f.errorf("the value oneof is set twice")
			}
			var x uint64
			if err := f.fixed64(&x); err != nil {
				return err
			}
			if f.num == 4 {
				v := math.Float64frombits(x)
				dp.AsDouble = &v
			} else {
				v := int64(x)
				dp.AsInt = &v
			}
			return nil
		case 7:
			return f.attr(&dp.Attributes)
		}
		return f.unknown()
	}
}

func histogram(dp *HistogramDataPoint) func(field) error {
	return func(f field) error {
		switch f.num {
		case 2:
			return f.fixed64(&dp.StartTimeUnixNano)
		case 3:
			return f.fixed64(&dp.TimeUnixNano)
		case 4:
			return f.fixed64(&dp.Count)
		case 5:
			return f.optDouble(&dp.Sum)
		case 6:
			return f.packedFixed64(&dp.BucketCounts)
		case 7:
			var xs []uint64
			err := f.packedFixed64(&xs)
			for _, x := range xs {
				dp.ExplicitBounds = append(dp.ExplicitBounds, math.Float64frombits(x))
			}
			return err
		case 9:
			return f.attr(&dp.Attributes)
		case 11:
			return f.optDouble(&dp.Min)
		case 12:
			return f.optDouble(&dp.Max)
		}
		return f.unknown()
	}
}

func expHistogram(dp *ExponentialHistogramDataPoint) func(field) error {
	buckets := func(b **Buckets, name string, f field) error {
		*b = &Buckets{}
		return f.msg(name, func(f field) error {
			switch f.num {
			case 1:
				var z uint64
				err := f.varint(&z)
				(*b).Offset = int32(protowire.DecodeZigZag(z))
				return err
			case 2:
				return f.packedVarint(&(*b).Counts)
			}
			return f.unknown()
		})
	}
	return func(f field) error {
		switch f.num {
		case 1:
			return f.attr(&dp.Attributes)
		case 2:
			return f.fixed64(&dp.StartTimeUnixNano)
		case 3:
			return f.fixed64(&dp.TimeUnixNano)
		case 4:
			return f.fixed64(&dp.Count)
		case 5:
			return f.optDouble(&dp.Sum)
		case 6:
			var z uint64
			err := f.varint(&z)
			dp.Scale = int32(protowire.DecodeZigZag(z))
			return err
		case 7:
			return f.fixed64(&dp.ZeroCount)
		case 8:
			return buckets(&dp.Positive, "Buckets", f)
		case 9:
			return buckets(&dp.Negative, "Buckets", f)
		case 12:
			return f.optDouble(&dp.Min)
		case 13:
			return f.optDouble(&dp.Max)
		case 14:
			var x uint64
			err := f.fixed64(&x)
			dp.ZeroThreshold = math.Float64frombits(x)
			return err
		}
		return f.unknown()
	}
}

func resource(r *Resource) func(field) error {
	return func(f field) error {
		if f.num == 1 {
			return f.attr(&r.Attributes)
		}
		return f.unknown()
	}
}

func scope(s *Scope) func(field) error {
	return func(f field) error {
		switch f.num {
		case 1:
			return f.str(&s.Name)
		case 2:
			return f.str(&s.Version)
		case 3:
			return f.attr(&s.Attributes)
		}
		return f.unknown()
	}
}

func anyValue(v *AnyValue) func(field) error {
	return func(f field) error {
		if v.Kind != "" {
			return f.errorf("the value oneof is set twice")
		}
		switch f.num {
		case 1:
			v.Kind = "string"
			return f.str(&v.String)
		case 2:
			v.Kind = "bool"
			var x uint64
			err := f.varint(&x)
			v.Bool = x != 0
			return err
		case 3:
			v.Kind = "int"
			var x uint64
			err := f.varint(&x)
			v.Int = int64(x)
			return err
		case 4:
			v.Kind = "double"
			var x uint64
			err := f.fixed64(&x)
			v.Double = math.Float64frombits(x)
			return err
		case 5:
			v.Kind = "array"
			v.Array = []*AnyValue{}
			return f.msg("ArrayValue", func(f field) error {
				if f.num != 1 {
					return f.unknown()
				}
				e := &AnyValue{}
				v.Array = append(v.Array, e)
				return f.msg("AnyValue", anyValue(e))
			})
		}
		return f.unknown()
	}
}

// field is one field of a message being read.
type field struct {
	in  string // the message's name
	num protowire.Number
	typ protowire.Type
	raw []byte // the field's value, without its tag
}

// walk calls fn on each field of the message b.
func walk(b []byte, name string, fn func(field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%s: bad tag: %w", name, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("%s field %d: %w", name, num, protowire.ParseError(m))
		}
		if err := fn(field{in: name, num: num, typ: typ, raw: b[n : n+m]}); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

func (f field) errorf(format string, args ...any) error {
	return fmt.Errorf("%s field %d: %s", f.in, f.num, fmt.Sprintf(format, args...))
}

func (f field) unknown() error { return f.errorf("no such field in OTLP") }

func (f field) want(t protowire.Type) error {
	if f.typ != t {
		return f.errorf("wire type %d, want %d", f.typ, t)
	}
	return nil
}

func (f field) msg(name string, fn func(field) error) error {
	var b []byte
	if err := f.bytes(&b); err != nil {
		return err
	}
	return walk(b, name, fn)
}

func (f field) bytes(p *[]byte) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	v, _ := protowire.ConsumeBytes(f.raw)
	*p = v
	return nil
}

func (f field) str(p *string) error {
	var b []byte
	err := f.bytes(&b)
	*p = string(b)
	return err
}

func (f field) varint(p *uint64) error {
	if err := f.want(protowire.VarintType); err != nil {
		return err
	}
	*p, _ = protowire.ConsumeVarint(f.raw)
	return nil
}

func (f field) fixed32(p *uint32) error {
	if err := f.want(protowire.Fixed32Type); err != nil {
		return err
	}
	*p, _ = protowire.ConsumeFixed32(f.raw)
	return nil
}

func (f field) fixed64(p *uint64) error {
	if err := f.want(protowire.Fixed64Type); err != nil {
		return err
	}
	*p, _ = protowire.ConsumeFixed64(f.raw)
	return nil
}

func (f field) optDouble(p **float64) error {
	var x uint64
	if err := f.fixed64(&x); err != nil {
		return err
	}
	v := math.Float64frombits(x)
	*p = &v
	return nil
}

func (f field) attr(p *[]*KeyValue) error {
	kv := &KeyValue{}
	*p = append(*p, kv)
	return f.msg("KeyValue", func(f field) error {
		switch f.num {
		case 1:
			return f.str(&kv.Key)
		case 2:
			kv.Value = &AnyValue{}
			return f.msg("AnyValue", anyValue(kv.Value))
		}
		return f.unknown()
	})
}

func (f field) packedFixed64(p *[]uint64) error {
	var b []byte
	if err := f.bytes(&b); err != nil {
		return err
	}
	if len(b)%8 != 0 {
		return f.errorf("packed fixed64 of %d bytes", len(b))
	}
	for ; len(b) > 0; b = b[8:] {
		x, _ := protowire.ConsumeFixed64(b)
		*p = append(*p, x)
	}
	return nil
}

func (f field) packedVarint(p *[]uint64) error {
	var b []byte
	if err := f.bytes(&b); err != nil {
		return err
	}
	for len(b) > 0 {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return f.errorf("packed varint: %v", protowire.ParseError(n))
		}
		*p = append(*p, x)
		b = b[n:]
	}
	return nil
}
