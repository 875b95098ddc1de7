package otlp

import (
	"context"
	"errors"
	"math"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

var osGetenv = os.Getenv

// errShutdown is returned by an export after Shutdown.
var errShutdown = errors.New("otlp: the exporter is shut down")

// TraceExporter sends spans to an OTLP/HTTP endpoint.
type TraceExporter struct {
	cfg  *config
	mu   sync.RWMutex
	done bool
}

var _ sdktrace.SpanExporter = (*TraceExporter)(nil)

// NewTraceExporter configures a span exporter from the environment read by
// getenv (os.Getenv when nil).
func NewTraceExporter(getenv func(string) string) (*TraceExporter, error) {
	if getenv == nil {
		getenv = osGetenv
	}
	c, err := loadConfig(getenv, "TRACES", "/v1/traces")
	if err != nil {
		return nil, err
	}
	return &TraceExporter{cfg: c}, nil
}

// ExportSpans sends one batch of spans.
func (e *TraceExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.RLock()
	done := e.done
	e.mu.RUnlock()
	if done {
		return errShutdown
	}
	if len(spans) == 0 {
		return nil
	}
	return e.cfg.send(ctx, encodeTraces(spans))
}

// Shutdown stops the exporter; later exports fail.
func (e *TraceExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	e.cfg.client.CloseIdleConnections()
	return ctx.Err()
}

// encodeTraces writes spans as an OTLP TracesData message (wire-identical
// to the collector's ExportTraceServiceRequest), grouped by resource and
// instrumentation scope in the order they first appear.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		scope instrumentation.Scope
		attrs attribute.Distinct
	}
	type scopeSpans struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourceSpans struct {
		res    *resource.Resource
		scopes []*scopeSpans
		index  map[scopeKey]*scopeSpans
	}
	var (
		order []*resourceSpans
		byRes = map[*resource.Resource]*resourceSpans{}
	)
	for _, s := range spans {
		r := s.Resource()
		rs := byRes[r]
		if rs == nil {
			rs = &resourceSpans{res: r, index: map[scopeKey]*scopeSpans{}}
			byRes[r] = rs
			order = append(order, rs)
		}
		sc := s.InstrumentationScope()
		k := scopeKey{instrumentation.Scope{Name: sc.Name, Version: sc.Version, SchemaURL: sc.SchemaURL}, sc.Attributes.Equivalent()}
		ss := rs.index[k]
		if ss == nil {
			ss = &scopeSpans{scope: sc}
			rs.index[k] = ss
			rs.scopes = append(rs.scopes, ss)
		}
		ss.spans = append(ss.spans, s)
	}
	var b buf
	for _, rs := range order {
		b.msg(1, func() { // TracesData.resource_spans
			b.msg(1, func() { writeResource(&b, rs.res) })
			for _, ss := range rs.scopes {
				b.msg(2, func() { // ResourceSpans.scope_spans
					b.msg(1, func() { writeScope(&b, ss.scope) })
					for _, s := range ss.spans {
						b.msg(2, func() { writeSpan(&b, s) })
					}
					b.str(3, ss.scope.SchemaURL)
				})
			}
			if rs.res != nil {
				b.str(3, rs.res.SchemaURL())
			}
		})
	}
	return b
}

// writeSpan writes the fields of a Span.
func writeSpan(b *buf, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b.bytes(1, tid[:])
	b.bytes(2, sid[:])
	b.str(3, sc.TraceState().String())
	if par := s.Parent(); par.SpanID().IsValid() {
		pid := par.SpanID()
		b.bytes(4, pid[:])
	}
	b.str(5, s.Name())
	b.varint(6, uint64(s.SpanKind()))
	b.fixed64(7, nanos(s.StartTime()))
	b.fixed64(8, nanos(s.EndTime()))
	writeAttrs(b, 9, s.Attributes())
	b.varint(10, uint64(uint32(s.DroppedAttributes())))
	for _, ev := range s.Events() {
		b.msg(11, func() { // Span.Event
			b.fixed64(1, nanos(ev.Time))
			b.str(2, ev.Name)
			writeAttrs(b, 3, ev.Attributes)
			b.varint(4, uint64(uint32(ev.DroppedAttributeCount)))
		})
	}
	b.varint(12, uint64(uint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		b.msg(13, func() { // Span.Link
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b.bytes(1, ltid[:])
			b.bytes(2, lsid[:])
			b.str(3, l.SpanContext.TraceState().String())
			writeAttrs(b, 4, l.Attributes)
			b.varint(5, uint64(uint32(l.DroppedAttributeCount)))
			b.fixed32(6, flags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b.varint(14, uint64(uint32(s.DroppedLinks())))
	b.msg(15, func() { writeStatus(b, s.Status()) })
	b.fixed32(16, flags(sc.TraceFlags(), s.Parent()))
}

// The span flags of OTLP: the W3C trace flags in the low byte, then whether
// the remote bit is known and whether the parent (or linked span) is remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func flags(tf trace.TraceFlags, remote trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if remote.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// The status codes of OTLP's Status.code.
const (
	statusOK    = 1
	statusError = 2
)

// writeStatus writes the fields of a Status.
func writeStatus(b *buf, s sdktrace.Status) {
	b.str(2, s.Description)
	switch s.Code {
	case codes.Ok:
		b.varint(3, statusOK)
	case codes.Error:
		b.varint(3, statusError)
	}
}

func nanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// writeResource writes the fields of a Resource (none for nil).
func writeResource(b *buf, r *resource.Resource) {
	if r != nil {
		writeAttrs(b, 1, r.Attributes())
	}
}

// writeScope writes the fields of an InstrumentationScope.
func writeScope(b *buf, s instrumentation.Scope) {
	b.str(1, s.Name)
	b.str(2, s.Version)
	writeAttrs(b, 3, s.Attributes.ToSlice())
}

// writeAttrs writes kvs as repeated KeyValue field n.
func writeAttrs(b *buf, n protowire.Number, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		b.msg(n, func() {
			b.str(1, string(kv.Key))
			b.msg(2, func() { writeValue(b, kv.Value) })
		})
	}
}

// writeValue writes the fields of an AnyValue: the one member of its
// oneof that v's type selects.
func writeValue(b *buf, v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		var x uint64
		if v.AsBool() {
			x = 1
		}
		b.varintAlways(2, x)
	case attribute.INT64:
		b.varintAlways(3, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b.fixed64Always(4, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b.strAlways(1, v.AsString())
	case attribute.BOOLSLICE:
		writeArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		writeArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		writeArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		writeArray(b, v.AsStringSlice(), attribute.StringValue)
	default:
		b.strAlways(1, v.String())
	}
}

// writeArray writes an AnyValue's array_value member.
func writeArray[T any](b *buf, s []T, f func(T) attribute.Value) {
	b.msg(5, func() {
		for _, x := range s {
			b.msg(1, func() { writeValue(b, f(x)) })
		}
	})
}
