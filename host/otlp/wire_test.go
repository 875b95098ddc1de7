package otlp

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/weirhost/weir/host/otlp/otlptest"
)

// TestWireMatchesGolden: the encoders write exactly what the reference
// implementation wrote for the fixtures (fixture_test.go).
func TestWireMatchesGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		got  []byte
	}{
		{"testdata/traces.golden.pb", encodeTraces(fixtureSpans())},
		{"testdata/metrics.golden.pb", encodeMetrics(fixtureMetrics())},
	} {
		want, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tc.got, want) {
			i := 0
			for i < len(want) && i < len(tc.got) && want[i] == tc.got[i] {
				i++
			}
			t.Errorf("%s: %d bytes, want %d; first difference at byte %d:\n got  %x\n want %x",
				tc.file, len(tc.got), len(want), i, tc.got[max(0, i-16):min(len(tc.got), i+16)], want[max(0, i-16):min(len(want), i+16)])
		}
	}
}

// TestDecodeGolden reads the reference encodings back with the tests'
// strict decoder (otlptest) and finds the fixtures' values, the zero
// values a oneof or an optional field carries among them.
func TestDecodeGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/traces.golden.pb")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := otlptest.DecodeTraces(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Resources) != 3 {
		t.Fatalf("%d resources, want 3 (two resources and none)", len(tr.Resources))
	}
	rs := tr.Resources[0]
	if rs.SchemaURL != "https://opentelemetry.io/schemas/1.26.0" || valueText(otlptest.Attr(rs.Resource.Attributes, "pid")) != "int:0" {
		t.Errorf("resource %+v", rs)
	}
	if len(rs.Scopes) != 2 || rs.Scopes[0].Scope.Version != "v1.2.3" || rs.Scopes[1].Scope.Name != "other" {
		t.Fatalf("scopes %+v", rs.Scopes)
	}
	turn, chat := rs.Scopes[0].Items[0], rs.Scopes[0].Items[1]
	for key, want := range map[string]string{"false": "bool:false", "zero": "int:0", "empty": `string:""`, "none": "array:[]",
		"strings": `array:[string:"a" string:""]`, "floats": "array:[double:0.25 double:0]", "nan": "double:+Inf"} {
		if got := otlptest.Attr(turn.Attributes, key); got == nil || valueText(got) != want {
			t.Errorf("attribute %s = %v, want %s", key, got, want)
		}
	}
	if turn.Status == nil || turn.Status.Code != otlptest.StatusOK || turn.Kind != otlptest.KindInternal {
		t.Errorf("turn %+v", turn)
	}
	if chat.Flags != 0x301 || chat.TraceState != "a=1" || len(chat.Events) != 2 || len(chat.Links) != 2 ||
		chat.DroppedAttributes != 3 || chat.DroppedEvents != 4 || chat.DroppedLinks != 5 ||
		chat.Events[0].DroppedAttributes != 2 || chat.Links[1].Flags != 0x301 || chat.Links[0].Flags != 0x101 ||
		chat.Status.Code != otlptest.StatusError || chat.Status.Message != "broke" {
		t.Errorf("chat %+v", chat)
	}
	if r := tr.Resources[2]; r.Resource == nil || len(r.Resource.Attributes) != 0 || r.Scopes[0].Items[0].Name != "no resource" {
		t.Errorf("the span without a resource: %+v", r)
	}

	b, err = os.ReadFile("testdata/metrics.golden.pb")
	if err != nil {
		t.Fatal(err)
	}
	md, err := otlptest.DecodeMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]*otlptest.Metric{}
	for _, m := range md.Resources[0].Scopes[0].Items {
		ms[m.Name] = m
	}
	if g := ms["gauge.int"].Gauge; g == nil || g.DataPoints[0].AsInt == nil || *g.DataPoints[0].AsInt != 0 || *g.DataPoints[1].AsInt != -3 {
		t.Errorf("gauge.int %+v", ms["gauge.int"])
	}
	if s := ms["sum.float"].Sum; s == nil || s.Temporality != otlptest.TemporalityDelta || s.IsMonotonic || *s.DataPoints[0].AsDouble != -1.5 {
		t.Errorf("sum.float %+v", ms["sum.float"])
	}
	if h := ms["hist.float"].Histogram; h == nil || !is(h.DataPoints[0].Sum, 0) || h.DataPoints[0].Min != nil {
		t.Errorf("hist.float %+v", ms["hist.float"])
	}
	if h := ms["hist.int"].Histogram.DataPoints[0]; !is(h.Min, 0) || !is(h.Max, 10) || len(h.ExplicitBounds) != 3 || h.BucketCounts[2] != 2 {
		t.Errorf("hist.int %+v", h)
	}
	if e := ms["exp.int"].ExponentialHistogram.DataPoints[0]; e.Scale != -2 || e.ZeroCount != 1 || e.ZeroThreshold != 0.001 ||
		e.Positive.Offset != -3 || len(e.Positive.Counts) != 3 || e.Positive.Counts[2] != 300 || e.Negative.Offset != 2 || !is(e.Min, -1) {
		t.Errorf("exp.int %+v", e)
	}
	if len(md.Resources[0].Scopes) != 2 || len(md.Resources[0].Scopes[1].Items) != 0 {
		t.Errorf("the empty scope: %+v", md.Resources[0].Scopes)
	}
}

// TestDecodeIsStrict: what a collector would misread fails the tests'
// decoder, naming the message.
func TestDecodeIsStrict(t *testing.T) {
	inSpan := func(fn func(b *buf)) []byte {
		var b buf
		b.msg(1, func() { b.msg(2, func() { b.msg(2, func() { fn(&b) }) }) })
		return b
	}
	golden, err := os.ReadFile("testdata/traces.golden.pb")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"unknown field", inSpan(func(b *buf) { b.varint(17, 1) }), "Span field 17: no such field"},
		{"wrong wire type", inSpan(func(b *buf) { b.varint(5, 1) }), "Span field 5: wire type 0, want 2"},
		{"oneof twice", inSpan(func(b *buf) {
			b.msg(9, func() { b.str(1, "k"); b.msg(2, func() { b.strAlways(1, "x"); b.varintAlways(3, 1) }) })
		}), "AnyValue field 3: the value oneof is set twice"},
		{"cut short", golden[:len(golden)-1], "TracesData field 1"},
	} {
		if _, err := otlptest.DecodeTraces(tc.body); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one with %q", tc.name, err, tc.want)
		}
	}
}
