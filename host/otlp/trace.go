package otlp

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
	return e.cfg.send(ctx, TracesData(spans))
}

// Shutdown stops the exporter; later exports fail.
func (e *TraceExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	e.cfg.client.CloseIdleConnections()
	return ctx.Err()
}

// TracesData converts spans into the OTLP message, grouped by resource and
// instrumentation scope in the order they first appear.
func TracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	type key struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	var (
		out    tracepb.TracesData
		rs     = map[*resource.Resource]*tracepb.ResourceSpans{}
		scopes = map[any]*tracepb.ScopeSpans{}
	)
	for _, s := range spans {
		r := s.Resource()
		rsp := rs[r]
		if rsp == nil {
			rsp = &tracepb.ResourceSpans{Resource: resourceProto(r), SchemaUrl: r.SchemaURL()}
			rs[r] = rsp
			out.ResourceSpans = append(out.ResourceSpans, rsp)
		}
		sc := s.InstrumentationScope()
		k := key{r, instrumentation.Scope{Name: sc.Name, Version: sc.Version, SchemaURL: sc.SchemaURL}}
		ssk := struct {
			key
			attrs attribute.Distinct
		}{k, sc.Attributes.Equivalent()}
		ss := scopes[ssk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: scopeProto(sc), SchemaUrl: sc.SchemaURL}
			scopes[ssk] = ss
			rsp.ScopeSpans = append(rsp.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	return &out
}

func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  flags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano:      nanos(s.StartTime()),
		EndTimeUnixNano:        nanos(s.EndTime()),
		Attributes:             attrs(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Status:                 statusProto(s.Status()),
	}
	if par := s.Parent(); par.SpanID().IsValid() {
		pid := par.SpanID()
		p.ParentSpanId = pid[:]
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano:           nanos(ev.Time),
			Name:                   ev.Name,
			Attributes:             attrs(ev.Attributes),
			DroppedAttributesCount: uint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             attrs(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags:                  flags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return p
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

func statusProto(s sdktrace.Status) *tracepb.Status {
	p := &tracepb.Status{Message: s.Description}
	switch s.Code {
	case codes.Ok:
		p.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		p.Code = tracepb.Status_STATUS_CODE_ERROR
	}
	return p
}

func nanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func resourceProto(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: attrs(r.Attributes())}
}

func scopeProto(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: attrs(s.Attributes.ToSlice())}
}

func attrs(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: value(kv.Value)}
	}
	return out
}

func value(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

func array[T any](s []T, f func(T) attribute.Value) *commonpb.AnyValue {
	vs := make([]*commonpb.AnyValue, len(s))
	for i, x := range s {
		vs[i] = value(f(x))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}
