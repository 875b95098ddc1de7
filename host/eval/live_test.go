package eval_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/eval/evaltest"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// liveRoute is the route of the live runs: a loopback OpenAI-compatible
// server, priced with the heuristic (RouteCounter).
var liveRoute = host.Route{Provider: "loopback", Model: "scripted", ContextWindow: 8192, MaxTokens: 1024}

// figures are what eval-vs-live compares.
type figures struct {
	Requests              int
	Compactions           int
	Summaries             int
	Input, Cached, Output int64
	ProbeLast             []int
}

// liveProbes are texts of the conversation: a user's question, a tool
// result and the text of an assistant message beside its tool call.
var liveProbes = []string{"Question 2: tell me about topic-2", "Result for {\"topic\":\"topic-3\"}", "Let me look topic-6 up first."}

// extractive answers summarize calls as eval's offline summarizer does.
type extractive struct{ calls int }

func (e *extractive) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	e.calls++
	text := eval.Extractive(req.Messages, 2000)
	return &host.SummaryResult{Content: []surface.Block{surface.Text(text)},
		Usage:        &surface.Usage{Output: int64(tokenizer.Heuristic.Count(text))},
		FinishReason: string(llm.FinishStop), Provider: req.Provider, Model: req.Model}, nil
}

// live runs turns of a conversation through set against a loopback server
// whose k-th reply is the same whatever the plugins (every third turn a
// tool call with text beside it, then an answer) and which reports the
// usage eval.UsageModel gives its request bodies. It returns the session's
// log and the live figures.
func live(t *testing.T, set eval.Set, turns int) (string, []surface.Event, figures) {
	t.Helper()
	ctx := context.Background()
	var script []llmtest.Reply
	var outs []int
	for i := 1; i <= turns; i++ {
		if i%3 == 0 {
			script = append(script, llmtest.Stream(llmtest.Role(), llmtest.Text(fmt.Sprintf("Let me look topic-%d up first.", i)),
				llmtest.ToolCall(0, fmt.Sprintf("call-%d", i), "lookup", fmt.Sprintf(`{"topic":"topic-%d"}`, i)), llmtest.Finish("tool_calls")))
			outs = append(outs, 9)
		}
		script = append(script, llmtest.Stream(llmtest.Role(), llmtest.Text(fmt.Sprintf("Answer %d: the reply to question %d, with a few words about topic-%d.", i, i, i)), llmtest.Finish("stop")))
		outs = append(outs, 17)
	}
	srv := llmtest.NewServer(t)
	model := &eval.UsageModel{Counter: eval.RouteCounter(liveRoute)}
	var mu sync.Mutex
	fig := figures{ProbeLast: make([]int, len(liveProbes))}
	srv.SetFallback(func(n int, r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if n >= len(script) {
			return llmtest.Error(400, "invalid_request_error", "", "the script has no more replies")
		}
		u, err := model.Usage(r.Body, int64(outs[n]))
		if err != nil {
			return llmtest.Error(400, "invalid_request_error", "", err.Error())
		}
		fig.Requests++
		fig.Input += u.Input + u.CacheRead
		fig.Cached += u.CacheRead
		fig.Output += u.Output
		for i, p := range liveProbes {
			if strings.Contains(string(r.Body), strings.ReplaceAll(p, `"`, `\"`)) {
				fig.ProbeLast[i] = n + 1
			}
		}
		reply := script[n]
		reply.Chunks = append(append([]string{}, reply.Chunks...), llmtest.Usage(int(u.Input+u.CacheRead), int(u.Output), int(u.CacheRead), 0))
		return reply
	})
	client, err := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL(), APIKey: "none"})
	require.NoError(t, err)
	s := host.NewSession("session-live", surface.New(surface.WithClock(func() int64 { return 1767268800000 })), nil, host.WithIDs(host.CounterIDs("live")))
	compactors, meter, err := set.Providers(s)
	require.NoError(t, err)
	tool := &host.FuncTool{ToolName: "lookup", Description: "Look a topic up.", Parameters: jsontext.Value(`{"type":"object","properties":{"topic":{"type":"string"}}}`),
		Fn: func(_ context.Context, args string) (string, error) {
			return "Result for " + args + ": " + strings.Repeat("lorem ipsum dolor sit amet ", 150), nil
		}}
	sum := &extractive{}
	a, err := host.NewAgent(s, host.Config{Route: liveRoute, Model: client, Prompt: &host.SectionPrompt{},
		Sections: []host.Section{{Key: "base", Text: "You are a test assistant."}}, Tools: []host.Tool{tool},
		Compactors: compactors, Meter: meter, Summarizer: sum})
	require.NoError(t, err)
	for i := 1; i <= turns; i++ {
		res, err := a.Run(ctx, a.UserMessage(fmt.Sprintf("Question %d: tell me about topic-%d, please.", i, i)))
		require.NoError(t, err)
		require.Equal(t, surface.EndCompleted, res.Reason.Kind, "turn %d: %+v", i, res.Reason)
	}
	fig.Summaries = sum.calls
	fig.Compactions = compactions(s.Log().Events())
	return s.ID(), s.Log().Events(), fig
}

// compactions counts the successful compactions of a log as eval counts
// them: each compaction/end without an error, and each prune pass (the
// compaction/prune events between two requests count once).
func compactions(events []surface.Event) int {
	n := 0
	for _, ev := range events {
		if ev.Type == surface.TypeCompactionEnd && !strings.Contains(string(ev.Data), `"error"`) {
			n++
		}
	}
	return n + prunePasses(events)
}

// prunePasses counts the requests before which a log shows
// compaction/prune events (the start of the log counts as one).
func prunePasses(events []surface.Event) int {
	n, requests, last := 0, 0, -1
	for _, ev := range events {
		switch ev.Type {
		case surface.TypeAssistantMessage, surface.TypeAssistantAttempt:
			requests++
		case surface.TypeCompactionPrune:
			if last != requests {
				last = requests
				n++
			}
		}
	}
	return n
}

// Eval's figures for each set equal a live run of that set against a
// model that reports usage: the replay gives every set the usage of its
// own requests, so each compacts when it would live.
func TestEvalEqualsLiveRuns(t *testing.T) {
	rt := runtime(t)
	const turns = 24
	confs := []struct{ name, conf string }{
		{"base", `{"headroomTokens": 1024}`},
		{"low", `{"headroomTokens": 1024, "thresholdRatio": 0.4}`},
		{"mid", `{"headroomTokens": 1024, "thresholdRatio": 0.6}`},
	}
	id, events, _ := live(t, evaltest.FirstParty(t, rt, "base", liveRoute, confs[0].conf), turns)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	seen := map[int]bool{}
	for i, c := range confs {
		t.Run(c.name, func(t *testing.T) {
			_, _, want := live(t, evaltest.FirstParty(t, rt, c.name, liveRoute, c.conf), turns)
			set := evaltest.FirstParty(t, rt, c.name, liveRoute, c.conf)
			set.Baseline = i == 0
			res, err := eval.Replay(context.Background(), rec, set, eval.Options{Probes: liveProbes})
			require.NoError(t, err)
			require.Empty(t, res.Notes)
			got := figures{Requests: res.Totals.Requests, Compactions: res.Totals.Compactions, Summaries: res.Totals.Summaries.Total(),
				Input: res.Totals.InputTokens, Cached: res.Totals.CachedTokens, Output: res.Totals.OutputTokens}
			for _, p := range res.Probes {
				got.ProbeLast = append(got.ProbeLast, p.LastVisible)
			}
			require.Equal(t, want, got)
			require.Positive(t, want.Compactions)
			seen[want.Compactions] = true
			t.Logf("%s: %+v", c.name, got)
		})
	}
	require.Len(t, seen, len(confs), "the sets must differ in their compactions for the test to tell them apart")
}

// The pruner example's figures in eval equal a live run of the same set,
// prune passes included: the pruner (a stateful third-party plugin whose
// state is in the log) with the first-party token-meter, at two trigger
// ratios, replayed on a session compaction-basic recorded.
func TestEvalEqualsLivePruner(t *testing.T) {
	rt := runtime(t)
	const turns = 24
	id, events, _ := live(t, evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`), turns)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	pruner := func(t *testing.T, name, conf string) eval.Set {
		pr := examplePlugin(t, rt, "../../examples/pruner", "pruner", provider.RoleCompaction, conf)
		meter := evaltest.FirstParty(t, rt, "meter", liveRoute, `{}`)
		return eval.Set{Name: name, Providers: func(s *host.Session) ([]host.CompactionProvider, host.Meter, error) {
			_, m, err := meter.Providers(s)
			if err != nil {
				return nil, nil, err
			}
			c, err := pr.Compaction()
			return []host.CompactionProvider{c}, m, err
		}}
	}
	seen := map[int]bool{}
	for _, c := range []struct{ name, conf string }{
		{"pruner-0.3", `{"minBytes": 2000, "keepRecent": 1, "triggerRatio": 0.3}`},
		{"pruner-0.5", `{"minBytes": 2000, "keepRecent": 1, "triggerRatio": 0.5}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, liveEvents, want := live(t, pruner(t, c.name, c.conf), turns)
			res, err := eval.Replay(context.Background(), rec, pruner(t, c.name, c.conf), eval.Options{Probes: liveProbes, KeepEvents: true})
			require.NoError(t, err)
			require.Empty(t, res.Notes)
			got := figures{Requests: res.Totals.Requests, Compactions: res.Totals.Compactions, Summaries: res.Totals.Summaries.Total(),
				Input: res.Totals.InputTokens, Cached: res.Totals.CachedTokens, Output: res.Totals.OutputTokens}
			for _, p := range res.Probes {
				got.ProbeLast = append(got.ProbeLast, p.LastVisible)
			}
			require.Equal(t, want, got)
			prunes := prunePasses(liveEvents)
			require.Positive(t, prunes, "the pruner pruned live")
			require.Equal(t, prunes, prunePasses(res.Events), "prune passes")
			require.Equal(t, prunes, want.Compactions, "the pruner's only compactions are its prune passes")
			seen[prunes] = true
			t.Logf("%s: %d prune passes, %+v", c.name, prunes, got)
		})
	}
	require.Len(t, seen, 2, "the two ratios must prune differently for the test to tell them apart")
}

// Every token of a request is in eval's input figure: the fourth request
// of a recorded conversation (two turns, then a tool call with text beside
// it and its result), written out here marker by marker as the DeepSeek V3
// template renders it, counted with the DeepSeek V3 tokenizer, equals the
// replay's input tokens for it, and a probe on the assistant's text beside
// the call sees it.
func TestInputCountsEveryToken(t *testing.T) {
	rt := runtime(t)
	id, events, _ := live(t, evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`), 3)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	require.Len(t, rec.Requests, 4)
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []jsontext.Value `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(rec.Requests[3], &body, json.RejectUnknownMembers(false)))
	require.Len(t, body.Tools, 1)
	require.Equal(t, "system", body.Messages[0].Role)
	result := `Result for {"topic":"topic-3"}: ` + strings.Repeat("lorem ipsum dolor sit amet ", 150)
	prompt := string(body.Tools[0]) + "\n" +
		"<｜begin▁of▁sentence｜>" + body.Messages[0].Content +
		"<｜User｜>Question 1: tell me about topic-1, please." +
		"<｜Assistant｜>Answer 1: the reply to question 1, with a few words about topic-1.<｜end▁of▁sentence｜>" +
		"<｜User｜>Question 2: tell me about topic-2, please." +
		"<｜Assistant｜>Answer 2: the reply to question 2, with a few words about topic-2.<｜end▁of▁sentence｜>" +
		"<｜User｜>Question 3: tell me about topic-3, please." +
		"<｜Assistant｜>Let me look topic-3 up first.<｜end▁of▁sentence｜>" +
		"<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>lookup\n```json\n" + `{"topic":"topic-3"}` + "\n```<｜tool▁call▁end｜>" +
		"<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>" + result + "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
	bpe := tokenizer.DeepSeekV3()
	set := evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`)
	set.Baseline = true
	res, err := eval.Replay(context.Background(), rec, set, eval.Options{Counter: bpe, Probes: []string{"Let me look topic-3 up first."}})
	require.NoError(t, err)
	require.Empty(t, res.Notes)
	require.Equal(t, int64(len(bpe.Encode(prompt))), res.Requests[3].InputTokens)
	require.Equal(t, 4, res.Probes[0].LastVisible)
}

// --tokenizer changes the report's counting only: the baseline replays
// the same requests, compactions and summaries whichever counter the
// report uses.
func TestTokenizerChangesOnlyTheCounting(t *testing.T) {
	rt := runtime(t)
	id, events, _ := live(t, evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`), 24)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	var totals []eval.Totals
	for _, c := range []tokenizer.Counter{nil, tokenizer.DeepSeekV3()} {
		set := evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`)
		set.Baseline = true
		res, err := eval.Replay(context.Background(), rec, set, eval.Options{Counter: c})
		require.NoError(t, err)
		require.Empty(t, res.Notes)
		require.Equal(t, len(rec.Requests), res.Totals.Reproduced)
		totals = append(totals, res.Totals)
	}
	require.Positive(t, totals[0].Compactions)
	require.Equal(t, totals[0].Compactions, totals[1].Compactions)
	require.Equal(t, totals[0].Summaries, totals[1].Summaries)
	require.NotEqual(t, totals[0].InputTokens, totals[1].InputTokens, "the report's counter counts")
}

// A log that ends within a turn (the process stopped) replays that turn's
// recorded requests and says the recording has no ending for it.
func TestTruncatedTurn(t *testing.T) {
	rt := runtime(t)
	id, events, _ := live(t, evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`), 3)
	cut := -1
	for i, ev := range events {
		if ev.Type == surface.TypeToolResult {
			cut = i + 1
		}
	}
	require.Positive(t, cut)
	rec, err := eval.Record(id, events[:cut])
	require.NoError(t, err)
	require.True(t, rec.Turns[2].Truncated)
	set := evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024}`)
	set.Baseline = true
	res, err := eval.Replay(context.Background(), rec, set, eval.Options{})
	require.NoError(t, err)
	require.Equal(t, len(rec.Requests), res.Totals.Reproduced)
	require.NotEmpty(t, res.Notes)
	last := res.Notes[len(res.Notes)-1]
	require.Contains(t, last, "turn 3 ended error")
	require.Contains(t, last, "(recorded: no ending, the log ends within the turn)")
}
