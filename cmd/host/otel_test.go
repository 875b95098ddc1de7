package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/otlp/otlptest"
)

// otlpSink is a loopback OTLP/HTTP receiver: it decodes the protobuf
// export requests it gets, strictly (otlptest), and keeps them.
type otlpSink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	traces  []*otlptest.TracesData
	metrics []*otlptest.MetricsData
	auth    []string
}

func newOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/v1/traces":
			var req *otlptest.TracesData
			req, err = otlptest.DecodeTraces(body)
			s.traces = append(s.traces, req)
		case "/v1/metrics":
			var req *otlptest.MetricsData
			req, err = otlptest.DecodeMetrics(body)
			s.metrics = append(s.metrics, req)
		default:
			err = io.ErrUnexpectedEOF
		}
		s.mu.Unlock()
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty response: full success
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// spans returns every span received, with its resource's service.name.
func (s *otlpSink) spans() (spans []*otlptest.Span, services []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, req := range s.traces {
		for _, rs := range req.Resources {
			var svc string
			if rs.Resource != nil {
				svc = attrString(rs.Resource.Attributes, "service.name")
			}
			for _, ss := range rs.Scopes {
				for _, sp := range ss.Items {
					spans = append(spans, sp)
					services = append(services, svc)
				}
			}
		}
	}
	return spans, services
}

// metricNames returns the names of the metrics received.
func (s *otlpSink) metricNames() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	for _, req := range s.metrics {
		for _, rm := range req.Resources {
			for _, sm := range rm.Scopes {
				for _, m := range sm.Items {
					names[m.Name] = true
				}
			}
		}
	}
	return names
}

func (s *otlpSink) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.traces) + len(s.metrics)
}

func attrString(kvs []*otlptest.KeyValue, key string) string {
	if v := otlptest.Attr(kvs, key); v != nil {
		return v.String
	}
	return ""
}

func spanNames(spans []*otlptest.Span) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return names
}

func spanNamed(t *testing.T, spans []*otlptest.Span, name string) *otlptest.Span {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %v", name, spanNames(spans))
	return nil
}

const otelSecret = "otel-header-secret-0123456789"

// TestRunExportsOTLP: host run against the offline model sends its spans
// and metrics to the OTLP/HTTP endpoint the standard variables name, with
// their headers, and prints none of them.
func TestRunExportsOTLP(t *testing.T) {
	t.Parallel()
	sink := newOTLPSink(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	r := runHostEnv(t, dir, "", []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.srv.URL,
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20" + otelSecret,
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test",
	}, "run", "--route", "offline", "--session", file, "--log-level", "trace", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout+r.stderr, otelSecret, "the headers are never printed")
	require.NotContains(t, r.stderr, "telemetry:", "no warning")

	spans, services := sink.spans()
	names := spanNames(spans)
	require.Contains(t, names, "invoke_agent")
	require.Contains(t, names, "weir.step")
	require.Contains(t, names, "chat tour.json")
	require.Contains(t, names, "render system-prompt", "the system prompt plugin's calls")
	for _, svc := range services {
		require.Equal(t, "weir", svc)
	}
	turn := spanNamed(t, spans, "invoke_agent")
	require.Empty(t, turn.ParentSpanID)
	session := attrString(turn.Attributes, "gen_ai.conversation.id")
	require.NotEmpty(t, session)
	require.Contains(t, readFile(t, file), session, "the conversation id is the session's id")
	for _, s := range spans {
		require.Equal(t, session, attrString(s.Attributes, "gen_ai.conversation.id"), s.Name)
		if len(s.ParentSpanID) > 0 {
			require.Equal(t, turn.TraceID, s.TraceID, "one trace: %s", s.Name)
		} else if s != turn {
			// The token meter folds the log when the agent attaches,
			// before the turn.
			require.Equal(t, "observe token-meter", s.Name)
		}
	}
	chat := spanNamed(t, spans, "chat tour.json")
	require.Equal(t, "offline", attrString(chat.Attributes, "gen_ai.provider.name"))
	require.EqualValues(t, otlptest.KindClient, chat.Kind)

	metrics := sink.metricNames()
	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "weir.plugin.call.duration"} {
		require.True(t, metrics[m], "metric %s among %v", m, metrics)
	}
	sink.mu.Lock()
	for _, a := range sink.auth {
		require.Equal(t, "Bearer "+otelSecret, a, "the exporter sends OTEL_EXPORTER_OTLP_HEADERS")
	}
	sink.mu.Unlock()
}

// TestRunOTLPTracesOnlyAndDisabled: the traces endpoint alone exports
// traces and no metrics; OTEL_SDK_DISABLED=true exports nothing; without
// the variables nothing is exported either.
func TestRunOTLPTracesOnlyAndDisabled(t *testing.T) {
	t.Parallel()
	sink := newOTLPSink(t)
	dir := t.TempDir()
	r := runHostEnv(t, dir, "", []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + sink.srv.URL + "/v1/traces"},
		"run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	spans, _ := sink.spans()
	require.Contains(t, spanNames(spans), "invoke_agent")
	require.Empty(t, sink.metricNames())

	off := newOTLPSink(t)
	r = runHostEnv(t, dir, "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + off.srv.URL, "OTEL_SDK_DISABLED=true"},
		"run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHostEnv(t, dir, "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + off.srv.URL, "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"},
		"run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Zero(t, off.requests())
}

// TestRunOTLPFlushesOnFailureAndInterrupt: a turn that fails, and a run
// interrupted with Ctrl-C, still export their spans before the command
// exits; an endpoint that is down costs a warning, not the run.
func TestRunOTLPFlushesOnFailureAndInterrupt(t *testing.T) {
	t.Parallel()
	sink := newOTLPSink(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "fail.json")
	writeFile(t, script, `{"replies": [{"error": "auth"}]}`)
	r := runHostEnv(t, dir, "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.srv.URL},
		"run", "--model", "offline:"+script, "hello")
	require.Equal(t, 1, r.code, r.stderr)
	spans, _ := sink.spans()
	turn := spanNamed(t, spans, "invoke_agent")
	require.NotNil(t, turn.Status)
	require.EqualValues(t, otlptest.StatusError, turn.Status.Code)
	require.Equal(t, "AUTH", attrString(turn.Attributes, "error.type"))

	// Interrupted while the model streams.
	live := llmtest.NewServer(t)
	stall := llmtest.Stream(llmtest.Role(), llmtest.Text("Partial "))
	stall.End = llmtest.EndStall
	live.Push(stall)
	sink2 := newOTLPSink(t)
	cmd := liveCmd(t, dir, live.URL(), "--session", filepath.Join(dir, "s.jsonl"), "wait for me")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink2.srv.URL)
	interruptAfter(t, cmd, "Partial", 30*time.Second)
	spans, _ = sink2.spans()
	turn = spanNamed(t, spans, "invoke_agent")
	require.Equal(t, "aborted", attrString(turn.Attributes, "weir.turn.end"))

	// A collector that is down: one warning, the run succeeds.
	down := newOTLPSink(t)
	down.srv.Close()
	r = runHostEnv(t, dir, "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + down.srv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT=1000"},
		"run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "weir: telemetry:")
}
