package otlp

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/weirhost/weir/host/otlp/otlptest"
)

// collector is a loopback OTLP/HTTP receiver: it answers with the statuses
// queued in codes (then 200) and keeps the decoded requests.
type collector struct {
	srv     *httptest.Server
	mu      sync.Mutex
	codes   []int
	after   string
	drop    int // connections to close before answering, first
	hits    int
	headers []http.Header
	traces  []*otlptest.TracesData
	metrics []*otlptest.MetricsData
	errs    []string
}

func newCollector(t *testing.T, codes ...int) *collector {
	c := &collector{codes: codes}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.hits++
		c.headers = append(c.headers, r.Header.Clone())
		if c.drop > 0 {
			c.drop--
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if len(c.codes) > 0 {
			code := c.codes[0]
			c.codes = c.codes[1:]
			if c.after != "" {
				w.Header().Set("Retry-After", c.after)
			}
			w.WriteHeader(code)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(r.Body)
			if err != nil {
				c.errs = append(c.errs, "gzip: "+err.Error())
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			body = z
		}
		b, err := io.ReadAll(body)
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			c.errs = append(c.errs, "bad request")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/v1/traces":
			var m *otlptest.TracesData
			m, err = otlptest.DecodeTraces(b)
			c.traces = append(c.traces, m)
		case "/v1/metrics":
			var m *otlptest.MetricsData
			m, err = otlptest.DecodeMetrics(b)
			c.metrics = append(c.metrics, m)
		default:
			c.errs = append(c.errs, "path "+r.URL.Path)
		}
		if err != nil {
			c.errs = append(c.errs, err.Error())
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestTraceExport(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		gzip bool
	}{
		{"plain", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20tok,x-a=1,x-key=a+b%2Bc=="}, false},
		{"gzip", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20tok"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newCollector(t)
			tt.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = col.srv.URL + "/"
			exp, err := NewTraceExporter(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			res := resource.NewSchemaless(attribute.String("service.name", "svc"))
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
			tr := tp.Tracer("scope", trace.WithInstrumentationVersion("v1"))
			ctx, parent := tr.Start(context.Background(), "parent")
			_, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
				attribute.Bool("b", true), attribute.Int64("i", 7), attribute.Float64("f", 1.5),
				attribute.String("s", "x"), attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2})))
			child.AddEvent("ev", trace.WithAttributes(attribute.Int("n", 1)))
			child.AddLink(trace.Link{SpanContext: parent.SpanContext()})
			child.SetStatus(codes.Error, "broke")
			child.End()
			parent.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			col.mu.Lock()
			defer col.mu.Unlock()
			if len(col.errs) > 0 || len(col.traces) != 2 {
				t.Fatalf("errors %v, %d requests, want 2", col.errs, len(col.traces))
			}
			if got := col.headers[0].Get("Authorization"); got != "Bearer tok" {
				t.Errorf("Authorization = %q, want the URL-decoded value", got)
			}
			if got, want := col.headers[0].Get("X-Key"), "a+b+c=="; tt.name == "plain" && got != want {
				t.Errorf("X-Key = %q, want %q: a plus sign is itself, as in base64", got, want)
			}
			if got := col.headers[0].Get("User-Agent"); !strings.HasPrefix(got, "weir-otlp/") {
				t.Errorf("User-Agent = %q, want the exporter named", got)
			}
			if got := col.headers[0].Get("Content-Encoding") == "gzip"; got != tt.gzip {
				t.Errorf("gzip = %v, want %v", got, tt.gzip)
			}
			rs := col.traces[0].Resources[0]
			if v := rs.Resource.Attributes[0]; v.Key != "service.name" || v.Value.String != "svc" {
				t.Errorf("resource attribute %v", v)
			}
			sc := rs.Scopes[0].Scope
			if sc.Name != "scope" || sc.Version != "v1" {
				t.Errorf("scope %v", sc)
			}
			sp := rs.Scopes[0].Items[0]
			pc := parent.SpanContext()
			ptid, psid := pc.TraceID(), pc.SpanID()
			cc := child.SpanContext()
			csid := cc.SpanID()
			switch {
			case sp.Name != "child", sp.Kind != otlptest.KindClient:
				t.Errorf("name %q kind %v", sp.Name, sp.Kind)
			case string(sp.TraceID) != string(ptid[:]), string(sp.SpanID) != string(csid[:]), string(sp.ParentSpanID) != string(psid[:]):
				t.Errorf("ids %x %x %x", sp.TraceID, sp.SpanID, sp.ParentSpanID)
			case sp.StartTimeUnixNano == 0 || sp.EndTimeUnixNano < sp.StartTimeUnixNano:
				t.Errorf("times %d %d", sp.StartTimeUnixNano, sp.EndTimeUnixNano)
			case sp.Status.Code != otlptest.StatusError || sp.Status.Message != "broke":
				t.Errorf("status %v", sp.Status)
			case len(sp.Events) != 1 || sp.Events[0].Name != "ev" || sp.Events[0].Attributes[0].Value.Int != 1:
				t.Errorf("events %v", sp.Events)
			case len(sp.Links) != 1 || string(sp.Links[0].SpanID) != string(psid[:]):
				t.Errorf("links %v", sp.Links)
			case sp.Flags&0xff != uint32(cc.TraceFlags()) || sp.Flags&flagHasIsRemote == 0:
				t.Errorf("flags %#x", sp.Flags)
			}
			want := map[string]string{"b": "bool:true", "i": "int:7", "f": "double:1.5", "s": `string:"x"`,
				"ss": `array:[string:"a" string:"b"]`, "is": "array:[int:1 int:2]"}
			if len(sp.Attributes) != len(want) {
				t.Errorf("%d attributes, want %d", len(sp.Attributes), len(want))
			}
			for _, kv := range sp.Attributes {
				if got := valueText(kv.Value); got != want[kv.Key] {
					t.Errorf("attribute %s = %s, want %s", kv.Key, got, want[kv.Key])
				}
			}
		})
	}
}

func TestMetricExport(t *testing.T) {
	col := newCollector(t)
	exp, err := NewMetricExporter(env(map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": col.srv.URL + "/v1/metrics"}))
	if err != nil {
		t.Fatal(err)
	}
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	m := mp.Meter("scope")
	ctx := context.Background()
	ic, _ := m.Int64Counter("ic")
	ic.Add(ctx, 3)
	fu, _ := m.Float64UpDownCounter("fu")
	fu.Add(ctx, -1.5)
	ih, _ := m.Int64Histogram("ih")
	ih.Record(ctx, 4)
	ih.Record(ctx, 10)
	fg, _ := m.Float64Gauge("fg")
	fg.Record(ctx, 2.5)
	var rm = new(metricdata.ResourceMetrics)
	if err := rd.Collect(ctx, rm); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(ctx, rm); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.errs) > 0 || len(col.metrics) != 1 {
		t.Fatalf("errors %v, %d requests", col.errs, len(col.metrics))
	}
	got := map[string]*otlptest.Metric{}
	for _, m := range col.metrics[0].Resources[0].Scopes[0].Items {
		got[m.Name] = m
	}
	if s := got["ic"].Sum; s == nil || !s.IsMonotonic || s.Temporality != otlptest.TemporalityCumulative ||
		s.DataPoints[0].AsInt == nil || *s.DataPoints[0].AsInt != 3 {
		t.Errorf("ic = %+v", got["ic"])
	}
	if s := got["fu"].Sum; s == nil || s.IsMonotonic || s.DataPoints[0].AsDouble == nil || *s.DataPoints[0].AsDouble != -1.5 {
		t.Errorf("fu = %+v", got["fu"])
	}
	if h := got["ih"].Histogram; h == nil || h.DataPoints[0].Count != 2 || !is(h.DataPoints[0].Sum, 14) ||
		!is(h.DataPoints[0].Min, 4) || !is(h.DataPoints[0].Max, 10) || len(h.DataPoints[0].BucketCounts) != len(h.DataPoints[0].ExplicitBounds)+1 {
		t.Errorf("ih = %+v", got["ih"])
	}
	if g := got["fg"].Gauge; g == nil || g.DataPoints[0].AsDouble == nil || *g.DataPoints[0].AsDouble != 2.5 {
		t.Errorf("fg = %+v", got["fg"])
	}
}

func TestSendStatus(t *testing.T) {
	tests := []struct {
		name    string
		codes   []int
		after   string
		timeout string
		hits    int
		errHas  string
	}{
		{"retry 503 then success", []int{503, 503}, "0", "10000", 3, ""},
		{"429 with Retry-After", []int{429}, "1", "10000", 2, ""},
		{"400 is not retried", []int{400}, "", "10000", 1, "400"},
		{"timeout bounds retries", []int{503, 503, 503, 503, 503, 503, 503, 503}, "1", "300", 1, "503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newCollector(t, tt.codes...)
			col.after = tt.after
			exp, err := NewTraceExporter(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": tt.timeout}))
			if err != nil {
				t.Fatal(err)
			}
			err = exp.cfg.send(context.Background(), nil)
			if tt.errHas == "" && err != nil || tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("err = %v, want one with %q", err, tt.errHas)
			}
			col.mu.Lock()
			defer col.mu.Unlock()
			if col.hits != tt.hits {
				t.Errorf("%d requests, want %d", col.hits, tt.hits)
			}
		})
	}
}

// A connection dropped before the answer is retried, as a status of 503
// is; a collector nobody listens on is retried until the timeout.
func TestSendTransportFailure(t *testing.T) {
	col := newCollector(t)
	col.drop = 1
	exp, err := NewTraceExporter(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.cfg.send(context.Background(), nil); err != nil {
		t.Fatalf("after a dropped connection: %v", err)
	}
	col.mu.Lock()
	if col.hits != 2 || len(col.traces) != 1 {
		t.Errorf("%d attempts and %d received, want 2 and 1", col.hits, len(col.traces))
	}
	col.mu.Unlock()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	exp, err = NewTraceExporter(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr, "OTEL_EXPORTER_OTLP_TIMEOUT": "300"}))
	if err != nil {
		t.Fatal(err)
	}
	err = exp.cfg.send(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "gave up retrying") {
		t.Errorf("err = %v, want a refused connection retried until the timeout", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		env  map[string]string
		name string // the variable the error names
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "secret"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "k=secret%zz"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "missing.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "k.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_KEY"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318"}, "endpoint"},
	}
	for _, tt := range tests {
		_, err := NewTraceExporter(env(tt.env))
		if err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%v: err = %v, want one naming %s", tt.env, err, tt.name)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: the error prints a header value: %v", tt.env, err)
		}
	}
}

// is says whether an optional double is set to v.
func is(p *float64, v float64) bool { return p != nil && *p == v }

// valueText writes an attribute value as "kind:value", arrays in brackets.
func valueText(v *otlptest.AnyValue) string {
	switch v.Kind {
	case "string":
		return fmt.Sprintf("string:%q", v.String)
	case "bool":
		return fmt.Sprintf("bool:%v", v.Bool)
	case "int":
		return fmt.Sprintf("int:%d", v.Int)
	case "double":
		return fmt.Sprintf("double:%v", v.Double)
	case "array":
		parts := make([]string, len(v.Array))
		for i, e := range v.Array {
			parts[i] = valueText(e)
		}
		return "array:[" + strings.Join(parts, " ") + "]"
	}
	return "?"
}
