package otlp

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The fixtures are fixed inputs of every shape the encoders write (each
// attribute type, events, links, remote and local parents, statuses, two
// resources and scopes, each metric kind with and without extrema, zero
// values that a oneof or an optional field must still carry). Their
// encodings in testdata/*.golden.pb were written by the OTLP project's
// generated Go types (go.opentelemetry.io/proto/otlp v1.11.0, marshalled
// by google.golang.org/protobuf), so TestWireMatchesGolden holds this
// package's encoder to the official one, byte for byte.

var (
	fixtureStart = time.Unix(1767268800, 123456789)
	fixtureRes   = resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "weir"), attribute.Int("pid", 0))
	fixtureRes2  = resource.NewSchemaless(attribute.Bool("b", false))
	fixtureScope = instrumentation.Scope{Name: "github.com/weirhost/weir/host", Version: "v1.2.3",
		SchemaURL: "https://example.test/s", Attributes: attribute.NewSet(attribute.String("k", "v"))}
)

func spanContext(tid, sid byte, remote bool, flags trace.TraceFlags, state string) trace.SpanContext {
	var t trace.TraceID
	var s trace.SpanID
	for i := range t {
		t[i] = tid + byte(i)
	}
	for i := range s {
		s[i] = sid + byte(i)
	}
	ts, _ := trace.ParseTraceState(state)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: flags, TraceState: ts, Remote: remote})
}

func fixtureSpans() []sdktrace.ReadOnlySpan {
	root := spanContext(1, 0x10, false, trace.FlagsSampled, "")
	remote := spanContext(1, 0x20, true, trace.FlagsSampled, "a=1,b=2")
	child := spanContext(1, 0x30, false, trace.FlagsSampled, "a=1")
	other := spanContext(0x80, 0x40, false, 0, "")
	stubs := tracetest.SpanStubs{
		{
			Name: "turn", SpanContext: root, SpanKind: trace.SpanKindInternal,
			StartTime: fixtureStart, EndTime: fixtureStart.Add(time.Second),
			Attributes: []attribute.KeyValue{
				attribute.Bool("bool", true), attribute.Bool("false", false), attribute.Int64("int", -7), attribute.Int64("zero", 0),
				attribute.Float64("float", 1.5), attribute.Float64("nan", math.Inf(1)), attribute.String("string", "x"), attribute.String("empty", ""),
				attribute.BoolSlice("bools", []bool{true, false}), attribute.Int64Slice("ints", []int64{1, -2, 0}),
				attribute.Float64Slice("floats", []float64{0.25, 0}), attribute.StringSlice("strings", []string{"a", ""}),
				attribute.StringSlice("none", nil),
			},
			Status:   sdktrace.Status{Code: codes.Ok},
			Resource: fixtureRes, InstrumentationScope: fixtureScope,
		},
		{
			Name: "chat", SpanContext: child, Parent: remote, SpanKind: trace.SpanKindClient,
			StartTime: fixtureStart.Add(time.Millisecond), EndTime: fixtureStart.Add(2 * time.Millisecond),
			Events: []sdktrace.Event{
				{Name: "first token", Time: fixtureStart.Add(1500 * time.Microsecond), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 2},
				{Name: "", Time: time.Time{}},
			},
			Links: []sdktrace.Link{
				{SpanContext: root, Attributes: []attribute.KeyValue{attribute.String("why", "retry")}, DroppedAttributeCount: 1},
				{SpanContext: remote},
			},
			Status:            sdktrace.Status{Code: codes.Error, Description: "broke"},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
			Resource: fixtureRes, InstrumentationScope: fixtureScope,
		},
		{
			Name: "tool", SpanContext: spanContext(1, 0x50, false, trace.FlagsSampled, ""), Parent: root,
			SpanKind: trace.SpanKindServer, StartTime: fixtureStart, EndTime: fixtureStart,
			Resource: fixtureRes, InstrumentationScope: instrumentation.Scope{Name: "other"},
		},
		{
			Name: "elsewhere", SpanContext: other, SpanKind: trace.SpanKindProducer,
			Resource: fixtureRes2, InstrumentationScope: fixtureScope,
		},
		{
			Name: "no resource", SpanContext: other, SpanKind: trace.SpanKindConsumer,
		},
	}
	return stubs.Snapshots()
}

func fixtureMetrics() *metricdata.ResourceMetrics {
	t0, t1 := fixtureStart, fixtureStart.Add(10*time.Second)
	set := attribute.NewSet(attribute.String("route", "offline"), attribute.Int("step", 2))
	return &metricdata.ResourceMetrics{
		Resource: fixtureRes,
		ScopeMetrics: []metricdata.ScopeMetrics{
			{
				Scope: fixtureScope,
				Metrics: []metricdata.Metrics{
					{Name: "gauge.int", Description: "an int gauge", Unit: "1", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
						{Attributes: set, StartTime: t0, Time: t1, Value: 0}, {Time: t1, Value: -3}}}},
					{Name: "gauge.float", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: t1, Value: 2.5}}}},
					{Name: "sum.int", Unit: "{token}", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
						DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, StartTime: t0, Time: t1, Value: 42}}}},
					{Name: "sum.float", Data: metricdata.Sum[float64]{Temporality: metricdata.DeltaTemporality,
						DataPoints: []metricdata.DataPoint[float64]{{StartTime: t0, Time: t1, Value: -1.5}}}},
					{Name: "hist.int", Unit: "ms", Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.HistogramDataPoint[int64]{{Attributes: set, StartTime: t0, Time: t1, Count: 3, Sum: 14,
							Bounds: []float64{0, 5, 10}, BucketCounts: []uint64{0, 1, 2, 0},
							Min: metricdata.NewExtrema[int64](0), Max: metricdata.NewExtrema[int64](10)}}}},
					{Name: "hist.float", Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality,
						DataPoints: []metricdata.HistogramDataPoint[float64]{{StartTime: t0, Time: t1, Count: 0, Sum: 0}}}},
					{Name: "exp.int", Data: metricdata.ExponentialHistogram[int64]{Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.ExponentialHistogramDataPoint[int64]{{Attributes: set, StartTime: t0, Time: t1, Count: 5, Sum: 20,
							Scale: -2, ZeroCount: 1, ZeroThreshold: 0.001,
							PositiveBucket: metricdata.ExponentialBucket{Offset: -3, Counts: []uint64{1, 0, 300}},
							NegativeBucket: metricdata.ExponentialBucket{Offset: 2},
							Min:            metricdata.NewExtrema[int64](-1), Max: metricdata.NewExtrema[int64](9)}}}},
					{Name: "exp.float", Data: metricdata.ExponentialHistogram[float64]{Temporality: metricdata.DeltaTemporality,
						DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{Time: t1, Scale: 3}}}},
				},
			},
			{Scope: instrumentation.Scope{Name: "empty"}},
		},
	}
}
