package provider_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// modules holds the test guests, built once by TestMain into the
// wasmbuild cache (unchanged sources are not rebuilt); the runtime of
// plugintest compiles them with the shared disk cache (WEIR_WAZERO_CACHE).
var modules = map[string][]byte{}

var moduleDirs = map[string]string{
	"benign":     "../plugin/testdata/benign",
	"liar":       "testdata/guests",
	"trap":       "testdata/guests",
	"checkpoint": "testdata/guests",
	"loop":       "testdata/guests",
	"flaky":      "testdata/guests",
	"badmeter":   "testdata/guests",
	"eventprobe": "testdata/guests",
	"legacy":     "testdata/legacy",
}

func TestMain(m *testing.M) {
	var dirs []string // a shared module's folder is named once per name, and built once
	for _, d := range moduleDirs {
		dirs = append(dirs, d)
	}
	built, err := plugintest.BuildDirs(context.Background(), dirs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building test modules:", err)
		os.Exit(1)
	}
	for name, d := range moduleDirs {
		modules[name] = built[d]
	}
	os.Exit(m.Run())
}

// load loads a test guest for a role under name; it is closed when the
// test ends. A test that sets no start deadline gets one a loaded machine
// meets (the library's 2 s default is for a user's machine, not for a
// test binary sharing two cores with others).
func load(t testing.TB, module, name string, role provider.Role, config string, limits provider.Limits, opts ...provider.Option) *provider.Plugin {
	t.Helper()
	if limits.Start == 0 {
		limits.Start = time.Minute
	}
	wasm, ok := modules[module]
	if !ok {
		wasm = plugintest.Build(t, module)
	}
	p, err := provider.Load(context.Background(), plugintest.Runtime(t), provider.Spec{
		Name: name, Role: role, Wasm: wasm, Config: []byte(config), Limits: limits}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// model is an in-process model: it answers every request with a text (or
// the next scripted reply) and records the wire bytes of each request.
type model struct {
	replies []func(*llm.Request) (*llm.Result, error)
	bodies  [][]byte
}

func (m *model) Stream(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	body, err := llm.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	m.bodies = append(m.bodies, body)
	if len(m.replies) > 0 {
		next := m.replies[0]
		m.replies = m.replies[1:]
		return next(req)
	}
	return text(fmt.Sprintf("answer %d", len(m.bodies))), nil
}

func text(s string) *llm.Result {
	return &llm.Result{Content: []surface.Block{surface.Text(s)}, FinishReason: llm.FinishStop,
		Usage: &surface.Usage{Input: 100, Output: 5}}
}

// summarizer answers summarization calls without the conversation's model,
// so every model request is a loop request.
type summarizer struct{ calls int }

func (s *summarizer) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	s.calls++
	return &host.SummaryResult{Content: []surface.Block{surface.Text(fmt.Sprintf("summary %d of %d messages", s.calls, len(req.Messages)))},
		FinishReason: "stop", Provider: req.Provider, Model: req.Model}, nil
}

// loop is an agent over an in-memory session with an in-process model.
type loop struct {
	t     testing.TB
	s     *host.Session
	a     *host.Agent
	model *model
	// script queues the model's replies of one turn, when set by a test.
	script func()
}

func newLoop(t testing.TB, cfg func(s *host.Session, c *host.Config)) *loop {
	l := &loop{t: t, model: &model{}}
	log := surface.New(surface.WithClock(func() int64 { return 1_750_000_000_000 }))
	l.s = host.NewSession("session-1", log, nil, host.WithIDs(host.CounterIDs("m")))
	c := host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000},
		Model: l.model, Prompt: &host.SectionPrompt{}, Summarizer: &summarizer{}}
	if cfg != nil {
		cfg(l.s, &c)
	}
	a, err := host.NewAgent(l.s, c)
	require.NoError(t, err)
	l.a = a
	return l
}

func (l *loop) turn(text string) *host.TurnResult {
	l.t.Helper()
	res, err := l.a.Run(context.Background(), l.a.UserMessage(text))
	require.NoError(l.t, err)
	return res
}

func (l *loop) events(typ string) []surface.Event {
	var out []surface.Event
	for _, e := range l.s.Log().Events() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (l *loop) failures() []host.PluginFailure {
	var out []host.PluginFailure
	for _, e := range l.events(surface.TypePluginFailure) {
		var f host.PluginFailure
		require.NoError(l.t, json.Unmarshal(e.Data, &f))
		out = append(out, f)
	}
	return out
}

// lastSystemPrompt is the text of the system message of the last request,
// rebuilt from the log (checkReconstruction shows it is what was sent).
func (l *loop) lastSystemPrompt() string {
	l.t.Helper()
	reqs, order, err := host.Requests(l.s.Log().Events(), l.s.ID())
	require.NoError(l.t, err)
	require.NotEmpty(l.t, order)
	last := reqs[order[len(order)-1]]
	require.NotEmpty(l.t, last.Messages)
	require.Equal(l.t, surface.RoleSystem, last.Messages[0].Role)
	return surface.TextOf(last.Messages[0].Content)
}

// checkReconstruction rebuilds every dispatched request from the log and
// compares its wire bytes with what the model received.
func (l *loop) checkReconstruction() {
	l.t.Helper()
	reqs, order, err := host.Requests(l.s.Log().Events(), l.s.ID())
	require.NoError(l.t, err)
	require.Len(l.t, order, len(l.model.bodies), "one settlement per dispatched request")
	for i, seq := range order {
		body, err := llm.EncodeRequest(reqs[seq])
		require.NoError(l.t, err)
		require.Equal(l.t, string(l.model.bodies[i]), string(body), "request %d (settled at seq %d)", i, seq)
	}
}

// logText is the whole log as JSON lines.
func (l *loop) logText() string {
	var b strings.Builder
	for _, e := range l.s.Log().Events() {
		b.Write(surface.AppendEvent(nil, &e))
		b.WriteByte('\n')
	}
	return b.String()
}
