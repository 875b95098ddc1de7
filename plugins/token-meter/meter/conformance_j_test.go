package meter_test

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/surface"
)

// Conformance checklist, group J: the token meter. The tests route through
// provider "acme" (priced with the fixed estimator) unless they test a
// tokenizer, so the expected figures follow 12.1 exactly.

func TestJ105_EmptySession(t *testing.T) {
	m, err := meter.New(testConfig)
	require.NoError(t, err)
	got, err := m.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, meter.BaselineNone, got.Baseline)
	require.Zero(t, got.BaselineTokens)
	require.Zero(t, got.TotalTokens)
	require.Zero(t, got.SurfaceTokens)
	require.Zero(t, got.LogRevision)
	require.NotNil(t, got.Nodes)
	require.Empty(t, got.Nodes)
	require.Nil(t, got.EstimateError)

	// A session whose only node is an empty system head is priced 0 too.
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	head := s.system("", surface.Append)
	got = s.measure(testConfig, nil)
	require.Equal(t, meter.BaselineNone, got.Baseline)
	require.Zero(t, got.TotalTokens)
	require.Equal(t, []meter.Node{{Seq: head}}, got.Nodes)
	require.Equal(t, int64(3), got.LogRevision)
}

func TestJ106_BlockPrices(t *testing.T) {
	block := func(raw string) surface.Block {
		var msg surface.Message
		data := `{"id":"x","role":"user","source":{"kind":"user"},"content":[` + raw + `]}`
		require.NoError(t, jsonUnmarshal([]byte(data), &msg))
		return msg.Content[0]
	}
	cases := []struct {
		name  string
		block surface.Block
		want  int64
	}{
		{"text", surface.Text("hello"), 2 + 4},          // ceil(5/4)+4
		{"text of 8", surface.Text("abcdefgh"), 2 + 4},  // ceil(8/4)+4
		{"empty text", surface.Text(""), 0 + 4},         // ceil(0/4)+4
		{"astral text", surface.Text("😀😀😀"), 2 + 4},     // 6 UTF-16 units
		{"chinese text", surface.Text("今天天气很好"), 2 + 4}, // 6 units, not 18 bytes
		{"reasoning", surface.Block{Type: surface.BlockReasoning, Text: "think it over"}, 4 + 4},
		{"tool-call", surface.ToolCall("c1", "read", `{"path":"a.go"}`), 1 + 4 + 4}, // ceil(4/4)+ceil(15/4)+4
		{"tool-call empty", surface.ToolCall("c1", "", ""), 4},
		{"tool-result", surface.ToolResult("c1", false, surface.Text("hello"), surface.Text("abc")), (6 + 5) + 4},
		{"tool-result empty", surface.ToolResult("c1", true), 0 + 4},
		// Unknown blocks: 4 + ceil(len(JSON.stringify(block))/4), measured
		// on the stored key order, without whitespace, escapes decoded.
		{"image", block(`{"type":"image","url":"http://x/a.png"}`), 4 + 10}, // 39 characters
		{"image spaced", block(`{ "url" : "http://x/a.png" , "type" : "image" }`), 4 + 10},
		{"image escapes", block(`{"type":"image","alt":"\u00e9\/\"\n","n":1.50}`), 4 + 10},
		// {"type":"image","alt":"é/\"\n","n":1.5} is 39 units.
		{"unknown typed", surface.Block{Type: "file"}, 4 + 4}, // {"type":"file"} is 15
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, meter.EstimateBlock(&c.block))
		})
	}

	// Messages add 4 for the role; a node projecting to nothing costs 0.
	content := []surface.Block{surface.Text("hello"), surface.ToolCall("c1", "read", `{"path":"a.go"}`)}
	require.Equal(t, int64(6+9+4), meter.EstimateMessage(content))
	require.Equal(t, int64(4), meter.EstimateMessage(nil))
	empty := surface.SystemMessage("s", "p", "")
	require.Zero(t, meter.EstimateNode(surface.TypeSystemMessage, &empty))
	require.Zero(t, meter.EstimateNode(surface.TypeAssistantMessage, &surface.Message{Role: "assistant", Content: []surface.Block{}}))
	require.Equal(t, int64(4), meter.EstimateNode(surface.TypeUserMessage, &surface.Message{Role: "user", Content: []surface.Block{}}))
	require.Zero(t, meter.EstimateNode(surface.TypeTurnStart, &surface.Message{}))

	// Tools: ceil(len(JSON(tools))/4)+4, 0 when absent.
	require.Zero(t, meter.EstimateTools(nil))
	tools := []jsontext.Value{jsontext.Value(`{"name":"read"}`), jsontext.Value(`{ "name" : "write" }`)}
	// [{"name":"read"},{"name":"write"}] is 34 characters.
	require.Equal(t, int64(9+4), meter.EstimateTools(tools))

	// The meter prices nodes with the same figures, heuristic and route
	// prices equal under the estimator.
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	var want []meter.Node
	add := func(seq, price int64) {
		want = append(want, meter.Node{Seq: seq, Tokens: price, HeuristicTokens: price})
	}
	add(s.system("", surface.Append), 0)
	add(s.add(surface.TypeUserMessage, s.userMsg(cases[0].block, cases[10].block, cases[12].block), surface.Append).Seq, 6+14+14+4)
	s.header(route("acme", "m1"), surface.ReasonInitial)
	add(s.assistant([]surface.Block{cases[5].block, cases[6].block}, nil, nil), 8+9+4)
	s.toolCall("c1", "read", `{"path":"a.go"}`)
	add(s.toolResult("c1", "hello"), 6+4+4)
	add(s.assistant([]surface.Block{}, nil, nil), 0)
	got := s.measure(testConfig, nil)
	require.Equal(t, want, got.Nodes)
	require.Equal(t, meter.Heuristic, got.Tokenizer)
}

func TestJ106_JSONLen(t *testing.T) {
	cases := []struct{ in, js string }{
		{`{ "a" : [ 1 , 2 ] }`, `{"a":[1,2]}`},
		{`"\u0041"`, `"A"`},
		{`"\ud83d\ude00"`, `"😀"`}, // one astral character: 2 units
		{`"\ud800"`, `"\ud800"`},  // a lone surrogate stays escaped
		{`"\/"`, `"/"`},
		{`"\u0001\n\t"`, `"\u0001\n\t"`},
		{`"é😀"`, `"é😀"`},
		{`[true,false,null]`, `[true,false,null]`},
		{`1.50`, `1.5`},
		{`1e3`, `1000`},
		{`1E+21`, `1e+21`},
		{`0.0000001`, `1e-7`},
		{`0.000001`, `0.000001`},
		{`-0.5`, `-0.5`},
		{`123.456e1`, `1234.56`},
		{`123456789012345678`, `123456789012345680`},
		{`1.5e-10`, `1.5e-10`},
		{`-0`, `0`},
		{`1e400`, `null`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			want := 0
			for _, r := range c.js {
				want++
				if r >= 0x10000 {
					want++
				}
			}
			require.Equal(t, want, meter.JSONLen([]byte(c.in)))
		})
	}
}

func TestJ107_EstimatedWithoutUsage(t *testing.T) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.system("be brief", surface.Append)
	s.user("hello there")
	h := route("acme", "m1", `{"name":"read","description":"reads a file"}`)
	s.header(h, surface.ReasonInitial)
	got := s.measure(testConfig, nil)
	tools := meter.EstimateTools(h.Tools)
	require.NotZero(t, tools)
	require.Equal(t, meter.BaselineEstimated, got.Baseline)
	require.Equal(t, tools+s.sumPrices(), got.BaselineTokens)
	require.Zero(t, got.SurfaceDeltaTokens)
	require.Equal(t, got.BaselineTokens, got.TotalTokens)
	require.Equal(t, s.sumPrices(), got.SurfaceTokens)
	require.Equal(t, tools, got.Breakdown.Tools)
}

// callSession is a session of one completed call that reported usage.
func callSession(t *testing.T, usage surface.Usage) (*session, surface.Header) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.system("be brief", surface.Append)
	s.user("what is two and two?")
	h := route("acme", "m1", `{"name":"calc"}`)
	s.header(h, surface.ReasonInitial)
	s.assistant([]surface.Block{surface.Text("four")}, nil, &usage)
	s.stepEnd()
	s.turnEnd()
	return s, h
}

func TestJ108_UsageBaseline(t *testing.T) {
	u := surface.Usage{Input: 1000, Output: 10, CacheRead: 100, CacheWrite: 5}
	s, h := callSession(t, u)
	got := s.measure(testConfig, nil)
	require.Equal(t, meter.BaselineUsage, got.Baseline)
	require.Equal(t, int64(1115), got.BaselineTokens)
	require.Zero(t, got.SurfaceDeltaTokens)
	require.Equal(t, int64(1115), got.TotalTokens)
	estimate := meter.EstimateTools(h.Tools) + s.sumPrices()
	require.Equal(t, estimate-1115, *got.EstimateError)

	// The next user message is a signed delta on top of the usage.
	s.turnStart()
	u2 := s.user("and three and three?")
	got = s.measure(testConfig, nil)
	require.Equal(t, meter.BaselineUsage, got.Baseline)
	require.Equal(t, s.price(u2), got.SurfaceDeltaTokens)
	require.Equal(t, 1115+s.price(u2), got.TotalTokens)
}

func TestJ109_UsageBelowAnchor(t *testing.T) {
	s, h := callSession(t, surface.Usage{Input: 3, Output: 1})
	got := s.measure(testConfig, nil)
	anchor := meter.EstimateTools(h.Tools) + s.sumPrices()
	require.Greater(t, anchor, int64(4))
	require.Equal(t, meter.BaselineEstimated, got.Baseline)
	require.Equal(t, anchor, got.BaselineTokens)
	require.Zero(t, got.SurfaceDeltaTokens)
	require.Equal(t, anchor, got.TotalTokens)
	require.Equal(t, anchor-4, *got.EstimateError)
}

func TestJ110_HeaderChangeDiscardsUsage(t *testing.T) {
	u := surface.Usage{Input: 1000, Output: 10, CacheRead: 100}
	s, h := callSession(t, u)
	surfaceTokens := s.sumPrices()

	// An override equal to the logged header (after canonicalization)
	// keeps the usage.
	same := h
	same.AdapterDefaults = &surface.AdapterDefaults{}
	got := s.measure(testConfig, &same)
	require.Equal(t, meter.BaselineUsage, got.Baseline)
	require.Equal(t, int64(1110), got.TotalTokens)

	maxTokens := int64(512)
	cases := map[string]surface.Header{
		"config":   {Config: surface.CallConfig{Provider: "acme", Model: "m1", MaxTokens: &maxTokens}, Tools: h.Tools},
		"tools":    route("acme", "m1", `{"name":"calc"}`, `{"name":"read"}`),
		"no tools": route("acme", "m1"),
		"model":    {Config: surface.CallConfig{Provider: "acme", Model: "m2"}, Tools: h.Tools},
	}
	for name, o := range cases {
		t.Run("override "+name, func(t *testing.T) {
			got := s.measure(testConfig, &o)
			require.Equal(t, meter.BaselineEstimated, got.Baseline)
			require.Equal(t, meter.EstimateTools(o.Tools)+surfaceTokens, got.BaselineTokens)
			require.Zero(t, got.SurfaceDeltaTokens)
		})
	}

	t.Run("logged change", func(t *testing.T) {
		s.turnStart()
		s.stepStart()
		s.header(cases["tools"], surface.ReasonChange)
		got := s.measure(testConfig, nil)
		require.Equal(t, meter.BaselineEstimated, got.Baseline)
		require.Equal(t, meter.EstimateTools(cases["tools"].Tools)+surfaceTokens, got.TotalTokens)
		// Measuring against the anchor's header brings the usage back.
		got = s.measure(testConfig, &h)
		require.Equal(t, meter.BaselineUsage, got.Baseline)
		require.Equal(t, int64(1110), got.TotalTokens)
	})
}

func TestJ111_UsageAcrossPromptChanges(t *testing.T) {
	prompts := []string{
		"initial",
		"initial\n\nExpanded: answer in full sentences, cite the files you read, and keep a list of open questions at the end of every reply.",
		"short",
		"",
	}
	usage := surface.Usage{Input: 1000, CacheRead: 100, Output: 10}
	configs := map[string]meter.Config{
		"deepseek-v3": testConfig,
		"heuristic":   {Reassemble: reassemble, Routes: map[string]string{"deepseek": meter.Heuristic}},
	}
	for _, retry := range []bool{false, true} {
		for _, middleware := range []bool{false, true} {
			for cname, cfg := range configs {
				name := cname
				if retry {
					name += "/retry"
				}
				if middleware {
					name += "/middleware"
				}
				t.Run(name, func(t *testing.T) {
					s := newSession(t)
					live, err := meter.New(cfg)
					require.NoError(t, err)
					var liveErr error
					s.log.Observe(func(e surface.Event) {
						if err := live.Observe(e); err != nil && liveErr == nil {
							liveErr = err
						}
					})
					var head int64 = -1
					var last *surface.Header
					logHeader := func() {
						h := route("deepseek", "deepseek-chat", `{"name":"read","parameters":{"type":"object"}}`)
						if middleware { // request middleware raises maxTokens every request
							h.Config.MaxTokens = i64(4096 + s.turn)
						}
						switch {
						case last == nil:
							s.header(h, surface.ReasonInitial)
						case !last.Equal(h):
							s.add(surface.TypeRequestHeader, surface.HeaderEvent{Header: h, Reason: surface.ReasonChange, StartsSeries: true}, surface.Op{})
						default:
							s.header(h, surface.ReasonSeries)
						}
						last = &h
					}
					for i, prompt := range prompts {
						s.turnStart()
						s.stepStart()
						if head < 0 {
							head = s.system(prompt, surface.Append)
						} else {
							head = s.system(prompt, surface.Replace(head, head), head)
						}
						s.user("question " + strings.Repeat("x", i*7))
						logHeader()
						if retry {
							// The first attempt fails; a request-error handler
							// replaces node 0 and the step retries.
							s.add(surface.TypeAssistantAttempt, map[string]any{"turn": s.turn, "step": s.step, "stream": map[string]any{"v": 1}}, surface.Op{})
							head = s.system(prompt+" (retry)", surface.Replace(head, head), head)
							logHeader()
						}
						s.assistant([]surface.Block{surface.Text("answer " + prompt[:min(len(prompt), 5)])}, nil, &usage)
						s.stepEnd()
						s.turnEnd()

						require.NoError(t, liveErr)
						got, err := live.Measure(nil)
						require.NoError(t, err)
						require.Equal(t, meter.BaselineUsage, got.Baseline, "turn %d", s.turn)
						require.Equal(t, int64(1110), got.BaselineTokens)
						require.Zero(t, got.SurfaceDeltaTokens)
						require.Equal(t, int64(1110), got.TotalTokens)
						require.Equal(t, cname, got.Tokenizer)
						require.Equal(t, got, s.measure(cfg, nil), "a fresh replay must match")
					}
				})
			}
		}
	}
}

func TestJ112_AssistantOutsideItsStep(t *testing.T) {
	const asst = `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"hi"}]},"stream":[]}`
	cases := map[string][]surface.Event{
		"no step/start": {
			ev(0, surface.TypeTurnStart, `{"turn":1}`, surface.Op{}),
			ev(1, surface.TypeAssistantMessage, asst, surface.Append),
		},
		"other step": {
			ev(0, surface.TypeTurnStart, `{"turn":1}`, surface.Op{}),
			ev(1, surface.TypeStepStart, `{"turn":1,"step":2}`, surface.Op{}),
			ev(2, surface.TypeAssistantMessage, asst, surface.Append),
		},
		"closed step": {
			ev(0, surface.TypeStepStart, `{"turn":1,"step":1}`, surface.Op{}),
			ev(1, surface.TypeStepEnd, `{"turn":1,"step":1}`, surface.Op{}),
			ev(2, surface.TypeAssistantMessage, asst, surface.Append),
		},
	}
	for name, events := range cases {
		t.Run(name, func(t *testing.T) {
			requireStuck(t, events, "assistant/message names turn 1 step 1")
		})
	}
}

// requireStuck folds events into a meter, requires the last one to fail
// with an error holding frag, the cursor to stay on it, and measuring and
// observing again to fail identically.
func requireStuck(t *testing.T, events []surface.Event, frag string) {
	t.Helper()
	bad := events[len(events)-1]
	m := replay(t, testConfig, events[:len(events)-1])
	before, err := m.Measure(nil)
	require.NoError(t, err)

	err1 := m.Observe(bad)
	require.Error(t, err1)
	require.Contains(t, err1.Error(), frag)
	require.Contains(t, err1.Error(), "seq "+itoa(bad.Seq))
	require.Equal(t, bad.Seq, m.Revision(), "the cursor must not advance")

	_, merr := m.Measure(nil)
	require.Equal(t, err1, merr)
	_, merr2 := m.Measure(nil)
	require.Equal(t, merr, merr2)
	require.Equal(t, err1, m.Observe(bad), "retrying the event fails identically")
	require.Equal(t, bad.Seq, m.Revision())

	next := bad
	next.Seq++
	require.ErrorContains(t, m.Observe(next), "stopped at seq "+itoa(bad.Seq))

	// Nothing of the failed event reached the state: a meter folding only
	// the good prefix measures what this one measured before.
	ok := replay(t, testConfig, events[:len(events)-1])
	want, err := ok.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, before, want)
}

func TestJ113_StepMismatch(t *testing.T) {
	cases := map[string]struct {
		events []surface.Event
		frag   string
	}{
		"two step/starts": {[]surface.Event{
			ev(0, surface.TypeTurnStart, `{"turn":1}`, surface.Op{}),
			ev(1, surface.TypeStepStart, `{"turn":1,"step":1}`, surface.Op{}),
			ev(2, surface.TypeStepStart, `{"turn":1,"step":2}`, surface.Op{}),
		}, "step/start turn 1 step 2 while turn 1 step 1 is open"},
		"step/end of another step": {[]surface.Event{
			ev(0, surface.TypeStepStart, `{"turn":1,"step":1}`, surface.Op{}),
			ev(1, surface.TypeStepEnd, `{"turn":1,"step":2}`, surface.Op{}),
		}, "does not match the open step"},
		"step/end of another turn": {[]surface.Event{
			ev(0, surface.TypeStepStart, `{"turn":1,"step":1}`, surface.Op{}),
			ev(1, surface.TypeStepEnd, `{"turn":2,"step":1}`, surface.Op{}),
		}, "does not match the open step"},
		"step/end without a step": {[]surface.Event{
			ev(0, surface.TypeTurnStart, `{"turn":1}`, surface.Op{}),
			ev(1, surface.TypeStepEnd, `{"turn":1,"step":1}`, surface.Op{}),
		}, "closes no open step"},
		"step/start without numbers": {[]surface.Event{
			ev(0, surface.TypeStepStart, `{"turn":1}`, surface.Op{}),
		}, "needs data.turn and data.step"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { requireStuck(t, c.events, c.frag) })
	}
}

func TestJ114_ReplaceOfAbsentRange(t *testing.T) {
	user := func(seq int64, op surface.Op) surface.Event {
		e := ev(seq, surface.TypeUserMessage, `{"id":"u`+itoa(seq)+`","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hi"}]}`, op)
		if op.Kind == surface.OpReplace {
			e.Sources = []int64{op.Start, op.End}
		}
		return e
	}
	prefix := []surface.Event{user(0, surface.Append), user(1, surface.Append), ev(2, surface.TypeRequestContext, `{"provider":"p","model":"m"}`, surface.Op{})}
	cases := map[string]struct {
		last surface.Event
		frag string
	}{
		"unknown start":        {user(3, surface.Replace(9, 1)), "start seq 9 not found in surface"},
		"unknown end":          {user(3, surface.Replace(0, 9)), "end seq 9 not found in surface"},
		"log-only start":       {user(3, surface.Replace(2, 2)), "start seq 2 not found in surface"},
		"start after end":      {user(3, surface.Replace(1, 0)), "start seq 1 (node 1) is after end seq 0 (node 0)"},
		"surface op missing":   {user(3, surface.Op{}), "without surfaceOp"},
		"content not an array": {ev(3, surface.TypeUserMessage, `{"id":"u","role":"user","source":{"kind":"user"},"content":{}}`, surface.Append), "content must be an array"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			requireStuck(t, append(append([]surface.Event{}, prefix...), c.last), c.frag)
		})
	}
	t.Run("shadowed start", func(t *testing.T) {
		events := []surface.Event{user(0, surface.Append), user(1, surface.Replace(0, 0)), user(2, surface.Replace(0, 0))}
		requireStuck(t, events, "start seq 0 not found in surface")
	})
}

func TestJ115_ContextBreakdown(t *testing.T) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	head := s.system("be brief and precise", surface.Append)
	u1 := s.user("list the files")
	h := route("acme", "m1", `{"name":"ls"}`)
	s.header(h, surface.ReasonInitial)
	a1 := s.assistant([]surface.Block{surface.ToolCall("c1", "ls", `{}`)}, nil, nil)
	s.toolCall("c1", "ls", `{}`)
	r1 := s.toolResult("c1", "a.go b.go")
	s.stepEnd()
	s.stepStart()
	later := s.system("now answer in French", surface.Append) // an in-history prompt update
	empty := s.system("", surface.Append)                     // priced 0, never the system figure
	a2 := s.assistant([]surface.Block{surface.Text("a.go et b.go")}, nil, nil)

	p := project(t, s.log.Events())
	got := p.ContextBreakdown()
	require.Equal(t, s.price(later), got.SystemTokens)
	require.Equal(t, meter.EstimateTools(h.Tools), got.ToolsTokens)
	require.Equal(t, s.sumPrices()-s.price(later), got.MessageTokens)
	require.Equal(t, s.price(head)+s.price(u1)+s.price(a1)+s.price(r1)+s.price(a2), got.MessageTokens)
	require.Zero(t, s.price(empty))

	// The measurement's finer breakdown agrees.
	m := s.measure(testConfig, nil)
	require.Equal(t, meter.Breakdown{
		System:      s.price(later),
		User:        s.price(u1) + s.price(head),
		Assistant:   s.price(a1) + s.price(a2),
		ToolResults: s.price(r1),
		Tools:       meter.EstimateTools(h.Tools),
	}, m.Breakdown)

	// Replacing the later prompt with an empty one leaves the head as the
	// last non-empty system node.
	s.system("", surface.Replace(later, later), later)
	p = project(t, s.log.Events())
	got = p.ContextBreakdown()
	require.Equal(t, s.price(head), got.SystemTokens)
	require.Equal(t, s.sumPrices()-s.price(head), got.MessageTokens)
}

func TestJ116_ShadowPrice(t *testing.T) {
	// compact appends compaction/start and /summary (with claim) and the
	// checkpoint replacing start..end, and returns the checkpoint's seq.
	compact := func(s *session, start, end int64, claimStart, claimEnd int64, count int64, text string) surface.Event {
		begin := s.add(surface.TypeCompactionStart, map[string]any{"compactionId": "c", "turn": s.turn}, surface.Op{})
		var shadowed []int64
		in := false
		for _, seq := range s.log.Nodes() {
			in = in || seq == start
			if in {
				shadowed = append(shadowed, seq)
			}
			if seq == end {
				break
			}
		}
		sum := s.add(surface.TypeCompactionSummary, map[string]any{"compactionId": "c",
			"shadowedRange": map[string]int64{"start": claimStart, "end": claimEnd}, "shadowedSeqs": shadowed,
			"shadowedTokenCount": count, "summary": text}, surface.Op{})
		return s.add(surface.TypeUserMessage, s.userMsg(surface.Text(text)), surface.Replace(start, end), append([]int64{begin.Seq, sum.Seq}, shadowed...)...)
	}
	build := func() *session {
		s := newSession(t)
		s.turnStart()
		s.stepStart()
		s.system("be brief", surface.Append)
		for i := 0; i < 4; i++ {
			s.user(strings.Repeat("lorem ipsum ", 5+i))
		}
		return s
	}

	t.Run("claim consumed", func(t *testing.T) {
		s := build()
		nodes := s.log.Nodes()
		before := project(t, s.log.Events()).ContextPressure().SurfaceTotal
		require.Equal(t, s.sumPrices(), before)
		cp := compact(s, nodes[1], nodes[3], nodes[1], nodes[3], 100, "summary of three")
		after := project(t, s.log.Events()).ContextPressure().SurfaceTotal
		require.Equal(t, s.price(cp.Seq)-100, after-before)
	})
	t.Run("replace without claim", func(t *testing.T) {
		s := build()
		nodes := s.log.Nodes()
		before := project(t, s.log.Events()).ContextPressure().SurfaceTotal
		s.add(surface.TypeUserMessage, s.userMsg(surface.Text("x")), surface.Replace(nodes[1], nodes[2]), nodes[1], nodes[2])
		require.Equal(t, before, project(t, s.log.Events()).ContextPressure().SurfaceTotal)
		// A prompt replacement carries no claim either.
		s.system("be terse", surface.Replace(nodes[0], nodes[0]), nodes[0])
		require.Equal(t, before, project(t, s.log.Events()).ContextPressure().SurfaceTotal)
	})
	t.Run("claim expired by another event", func(t *testing.T) {
		s := build()
		nodes := s.log.Nodes()
		before := project(t, s.log.Events()).ContextPressure().SurfaceTotal
		begin := s.add(surface.TypeCompactionStart, map[string]any{"compactionId": "c"}, surface.Op{})
		sum := s.add(surface.TypeCompactionSummary, map[string]any{"compactionId": "c",
			"shadowedRange": map[string]int64{"start": nodes[1], "end": nodes[1]}, "shadowedTokenCount": 50}, surface.Op{})
		s.add(surface.TypeRequestContext, map[string]any{"provider": "acme", "model": "m1", "contextWindow": 64000}, surface.Op{})
		s.add(surface.TypeUserMessage, s.userMsg(surface.Text("x")), surface.Replace(nodes[1], nodes[1]), begin.Seq, sum.Seq, nodes[1])
		p := project(t, s.log.Events())
		require.Equal(t, before, p.ContextPressure().SurfaceTotal)
		require.Equal(t, int64(64000), p.ContextPressure().ContextWindow)
	})
	t.Run("claim for another range", func(t *testing.T) {
		s := build()
		nodes := s.log.Nodes()
		cp := compact(s, nodes[1], nodes[3], nodes[1], nodes[2], 100, "summary")
		events := s.log.Events()
		p := project(t, events[:cp.Seq])
		state := [3]any{p.ContextPressure(), p.ContextBreakdown(), p.TokenUsage()}
		err := p.Observe(cp)
		require.ErrorContains(t, err, "claims range")
		require.Equal(t, cp.Seq, p.Revision())
		require.Equal(t, state, [3]any{p.ContextPressure(), p.ContextBreakdown(), p.TokenUsage()})
		require.Equal(t, err, p.Observe(cp), "retrying fails identically")
		require.Equal(t, err, p.Err())
	})
}

func TestJ_TokenUsageAndPressure(t *testing.T) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.system("be brief", surface.Append)
	s.user("hello")
	s.header(route("acme", "m1"), surface.ReasonInitial)
	s.add(surface.TypeRequestContext, map[string]any{"provider": "acme", "model": "m1", "contextWindow": 128000}, surface.Op{})
	beforeAnswer := s.sumPrices()
	a1 := s.assistant([]surface.Block{surface.Text("hi")}, nil, &surface.Usage{Input: 100, Output: 5, CacheRead: 20, CacheWrite: 3})
	s.stepEnd()
	s.turnEnd()
	p := project(t, s.log.Events())
	require.Equal(t, meter.TokenUsage{Input: 100, Output: 5, CacheRead: 20, CacheWrite: 3}, p.TokenUsage())
	require.Equal(t, meter.ContextPressure{PressureTokens: 123, ContextWindow: 128000,
		ProjectedTokens: 123 + s.price(a1), SurfaceTotal: beforeAnswer + s.price(a1)}, p.ContextPressure())

	// A second sample for the same turn/step replaces the first; a new
	// step adds.
	s.turnStart()
	s.stepStart()
	s.user("again")
	s.assistant([]surface.Block{surface.Text("a")}, nil, &surface.Usage{Input: 10, Output: 1})
	s.assistant([]surface.Block{surface.Text("b")}, nil, &surface.Usage{Input: 12, Output: 2, CacheRead: 1})
	s.add(surface.TypeRequestContext, map[string]any{"provider": "acme", "model": "m2"}, surface.Op{})
	p = project(t, s.log.Events())
	require.Equal(t, meter.TokenUsage{Input: 112, Output: 7, CacheRead: 21, CacheWrite: 3}, p.TokenUsage())
	require.Equal(t, int64(13), p.ContextPressure().PressureTokens)
	require.Zero(t, p.ContextPressure().ContextWindow, "a route without capacity clears the window")
}
