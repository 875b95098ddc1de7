package compact

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// conversation builds [S, U, A, U, A, U] with big messages inside turn 1.
func conversation(t *testing.T) *builder {
	b := newBuilder(t).open()
	b.header("p", "m", 0, `{"name":"echo"}`)
	b.sys("You are helpful.")
	for i := 0; i < 3; i++ {
		b.user(words(200))
		if i < 2 {
			b.asst(words(200))
		}
	}
	return b
}

// failedBracket checks a [start, end{error}] batch and returns the error.
func failedBracket(t *testing.T, out Outcome) string {
	t.Helper()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, types(out.Proposals))
	start, end := decode(t, out.Proposals[0].Data), decode(t, out.Proposals[1].Data)
	require.Equal(t, start["compactionId"], end["compactionId"])
	msg, _ := end["error"].(string)
	require.NotEmpty(t, msg)
	return msg
}

func TestI93_BracketProposals(t *testing.T) {
	b := conversation(t)
	s := b.session()
	before := s.l.Nodes()
	out, err := Compact(s, DefaultConfig(), Request{Reason: Overflow, Turn: 1, SessionID: "sess"}, &State{})
	require.NoError(t, err)
	require.Nil(t, out.Warning)
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, types(out.Proposals))
	next := s.l.NextSeq()
	shadowed := before[1 : len(before)-1]
	cp := out.Proposals[2]
	require.Equal(t, surface.Replace(shadowed[0], shadowed[len(shadowed)-1]), cp.Op)
	require.Equal(t, append([]int64{next, next + 1}, shadowed...), cp.Sources)
	id := CompactionID("sess", next)
	start := decode(t, out.Proposals[0].Data)
	require.Equal(t, map[string]any{"compactionId": id, "turn": float64(1)}, start)
	sum := decode(t, out.Proposals[1].Data)
	require.Equal(t, id, sum["compactionId"])
	require.Equal(t, map[string]any{"start": float64(shadowed[0]), "end": float64(shadowed[len(shadowed)-1])}, sum["shadowedRange"])
	require.Len(t, sum["shadowedSeqs"], len(shadowed))
	m, err := Estimate(s)
	require.NoError(t, err)
	var heur int64
	for _, n := range m.Nodes[1 : len(m.Nodes)-1] {
		heur += n.HeuristicTokens
	}
	require.Equal(t, float64(heur), sum["shadowedTokenCount"])
	require.Equal(t, "p", sum["provider"])
	require.Equal(t, float64(65536), sum["maxTokens"])
	end := decode(t, out.Proposals[3].Data)
	require.Equal(t, id, end["compactionId"])
	require.NotContains(t, end, "error")
	require.Less(t, end["tokensAfter"], end["tokensBefore"])

	evs, err := s.admit(out.Proposals)
	require.NoError(t, err)
	require.Equal(t, next+2, evs[2].Seq)
	require.Equal(t, []int64{before[0], next + 2, before[len(before)-1]}, s.l.Nodes())
	msg, _ := s.l.Message(next + 2)
	require.True(t, IsCheckpoint(msg))
	require.Equal(t, id+"-checkpoint", msg.ID)
	require.JSONEq(t, `{"compactionId":"`+id+`"}`, string(msg.Source.Unknown))
	require.Equal(t, Preamble+"\n\n"+OpenTag, msg.Content[0].Text)
	require.Equal(t, CloseTag, msg.Content[len(msg.Content)-1].Text)

	// The summarizer saw the head, the span and the header's tools.
	require.Len(t, s.calls, 1)
	call := s.calls[0]
	require.Equal(t, "system", call.Messages[0].Role)
	require.Len(t, call.Messages, 1+len(shadowed))
	require.Equal(t, [][]byte{[]byte(`{"name":"echo"}`)}, call.Tools)
	wire := call.Wire()
	require.Equal(t, Instruction, wire[len(wire)-1].Content[0].Text)
	require.Equal(t, "user", wire[len(wire)-1].Role)
}

func TestI93_InstructionNamesSectionsAndRules(t *testing.T) {
	at := -1
	for _, s := range Sections {
		i := strings.Index(Instruction, "## "+s)
		require.Greater(t, i, at, "section %q in order", s)
		at = i
	}
	for _, frag := range []string{"(none)", "bullet", "file paths, commands, error messages", "correction", "Do not call any tools", OpenTag, "do not mention that it is a summary"} {
		require.Contains(t, Instruction, frag)
	}
}

func TestI100_SummaryNotSmaller(t *testing.T) {
	b := newBuilder(t).open()
	b.header("p", "m", 0)
	b.sys("prompt")
	b.user("hi")
	b.asst("hello")
	b.user("next")
	s := b.session()
	before := s.l.Nodes()
	out, err := Compact(s, DefaultConfig(), Request{Reason: Overflow, Turn: 1}, &State{})
	require.NoError(t, err)
	require.Contains(t, failedBracket(t, out), "summary is not smaller")
	_, err = s.admit(out.Proposals)
	require.NoError(t, err)
	require.Equal(t, before, s.l.Nodes(), "the surface is untouched")
}

func TestI103_SummarizerResultRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *SummaryResult
		err  error
		want string
	}{
		{"max tokens", &SummaryResult{Content: []surface.Block{surface.Text("## Primary")}, FinishReason: "max-tokens"}, nil, "MAX_TOKENS"},
		{"length", &SummaryResult{Content: []surface.Block{surface.Text("## Primary")}, FinishReason: "length"}, nil, "MAX_TOKENS"},
		{"image", &SummaryResult{Content: []surface.Block{surface.Text("x"), {Type: "image", Unknown: []byte(`{"type":"image","data":"AAAA"}`)}}, FinishReason: "stop"}, nil, `unsupported content (a "image" block)`},
		{"no text", &SummaryResult{Content: []surface.Block{{Type: surface.BlockReasoning, Text: "thinking"}}, FinishReason: "stop"}, nil, "no text"},
		{"blank text", &SummaryResult{Content: []surface.Block{surface.Text(" \n\t ")}, FinishReason: "stop"}, nil, "no text"},
		{"error finish", &SummaryResult{Content: []surface.Block{surface.Text("x")}, FinishReason: "error"}, nil, `ERROR: the summarizer finished with "error"`},
		{"summarizer error", nil, errors.New("quota exhausted"), "summarization failed: quota exhausted"},
		{"nil result", nil, nil, "no result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := conversation(t)
			s := b.session()
			s.reply = func(*SummaryRequest) (*SummaryResult, error) { return tc.res, tc.err }
			out, err := Compact(s, DefaultConfig(), Request{Reason: Manual, Route: Route{Provider: "p", Model: "m"}}, &State{})
			require.NoError(t, err)
			require.Contains(t, failedBracket(t, out), tc.want)
			start := decode(t, out.Proposals[0].Data)
			require.Nil(t, start["turn"], "manual brackets have no owner")
		})
	}
	// Reasoning beside the text is kept in rawOutput only.
	b := conversation(t)
	s := b.session()
	s.reply = func(*SummaryRequest) (*SummaryResult, error) {
		return &SummaryResult{Content: []surface.Block{{Type: surface.BlockReasoning, Text: "plan"}, surface.Text("## Primary Request and Intent\n- x")},
			FinishReason: "stop", Usage: &surface.Usage{Input: 10, Output: 3}, Provider: "sp", Model: "sm"}, nil
	}
	out, err := Compact(s, DefaultConfig(), Request{Reason: Manual}, &State{})
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4)
	sum := decode(t, out.Proposals[1].Data)
	require.Equal(t, "## Primary Request and Intent\n- x", sum["summary"])
	require.Len(t, sum["rawOutput"], 2)
	require.Equal(t, "sp", sum["provider"])
	require.Equal(t, "sm", sum["model"])
	require.Equal(t, map[string]any{"inputTokens": float64(10), "outputTokens": float64(3)}, sum["usage"])
	cp := decode(t, out.Proposals[2].Data)
	require.Len(t, cp["content"], 3, "preamble, the text block, close tag")
}

// Pressure plans further passes on the predicted surface: the second
// checkpoint replaces the first one, citing the seq it will get.
func TestI101_PressurePassesInOneBatch(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 250, "compactionRetries": 1}`))
	require.NoError(t, err)
	b := conversation(t)
	s := b.session()
	// The first summary is big, the second small.
	s.reply = func(req *SummaryRequest) (*SummaryResult, error) {
		if len(s.calls) == 1 {
			return textResult(words(250)), nil
		}
		return textResult("## Primary Request and Intent\n- short"), nil
	}
	req := Request{Reason: Pressure, Turn: 1, Route: Route{Provider: "p", Model: "m", ContextWindow: 1200}}
	before := s.l.Nodes()
	st := &State{}
	out, err := Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Nil(t, out.Warning)
	require.Len(t, out.Proposals, 8)
	next := s.l.NextSeq()
	first, second := out.Proposals[2], out.Proposals[6]
	require.Equal(t, surface.Replace(before[1], before[4]), first.Op)
	require.Equal(t, surface.Replace(next+2, next+2), second.Op, "the second pass compacts the first checkpoint")
	require.Equal(t, []int64{next + 4, next + 5, next + 2}, second.Sources)
	require.Len(t, s.calls, 2)
	require.Contains(t, s.calls[1].Messages[1].Content[1].Text, "word word", "the second input is the first checkpoint")
	_, err = s.admit(out.Proposals)
	require.NoError(t, err)
	require.Equal(t, []int64{before[0], next + 6, before[5]}, s.l.Nodes())
	m, err := Estimate(s)
	require.NoError(t, err)
	require.Less(t, m.TotalTokens, int64(600))
	require.Equal(t, []int64{1, 1}, st.Attempts)
	sum2 := decode(t, out.Proposals[5].Data)
	require.Equal(t, []any{float64(next + 2)}, sum2["shadowedSeqs"])
}

func TestI101_StillAboveThreshold(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 300, "compactionRetries": 0}`))
	require.NoError(t, err)
	b := conversation(t)
	s := b.session()
	s.reply = func(*SummaryRequest) (*SummaryResult, error) { return textResult(words(250)), nil }
	out, err := Compact(s, cfg, Request{Reason: Pressure, Turn: 1, Route: Route{ContextWindow: 1200}}, &State{})
	require.NoError(t, err)
	require.ErrorContains(t, out.Warning, "still above threshold after 1 attempt")
	require.Len(t, out.Proposals, 4, "the checkpoint still lands: it shrinks the surface")
	end := decode(t, out.Proposals[3].Data)
	require.Contains(t, end["warning"], "still above threshold after 1 attempt")
	require.NotContains(t, end, "error")
}

func TestLoopSafety_CompactionsPerWindow(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"maxCompactionsPerWindow": 2, "windowTurns": 2}`))
	require.NoError(t, err)
	s := conversation(t).session()
	st := &State{}
	req := Request{Reason: Overflow, Turn: 1}
	for i := 0; i < 2; i++ {
		st.OverflowCount = 0
		out, err := Compact(s, cfg, req, st)
		require.NoError(t, err)
		require.Len(t, out.Proposals, 4)
	}
	st.OverflowCount = 0
	out, err := Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Empty(t, out.Proposals)
	require.ErrorContains(t, out.Warning, "compaction limit reached: 2 automatic compactions within the last 2 turn(s)")
	out, _ = Compact(s, cfg, req, st)
	require.Nil(t, out.Warning, "reported once per turn")
	require.Len(t, s.calls, 2)
	// Turn 2 is still inside the window; turn 3 is not.
	req.Turn = 2
	out, _ = Compact(s, cfg, req, st)
	require.Empty(t, out.Proposals)
	req.Turn = 3
	out, err = Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4)
	// Failed attempts count too: a broken summarizer is not called every step.
	s.reply = func(*SummaryRequest) (*SummaryResult, error) { return nil, errors.New("down") }
	st.OverflowCount = 0
	out, _ = Compact(s, cfg, req, st)
	require.Len(t, out.Proposals, 2)
	st.OverflowCount = 0
	out, _ = Compact(s, cfg, req, st)
	require.Empty(t, out.Proposals)
	// Manual compaction is not limited.
	out, err = Compact(s, cfg, Request{Reason: Manual}, st)
	require.NoError(t, err)
	require.Len(t, out.Proposals, 2)
}

func TestAutoFalse(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"auto": false, "headroomTokens": 0}`))
	require.NoError(t, err)
	s := conversation(t).session()
	for _, r := range []Reason{Pressure, Overflow} {
		out, err := Compact(s, cfg, Request{Reason: r, Turn: 1, Route: Route{ContextWindow: 100}}, &State{})
		require.NoError(t, err)
		require.Empty(t, out.Proposals)
		require.Nil(t, out.Warning)
	}
	require.Empty(t, s.calls)
	out, err := Compact(s, cfg, Request{Reason: Manual}, &State{})
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4, "manual compaction still works")
}

func TestRequestChecks(t *testing.T) {
	s := conversation(t).session()
	_, err := Compact(s, nil, Request{Reason: Manual, Turn: 1}, nil)
	require.ErrorIs(t, err, ErrBusy)
	_, err = Compact(s, nil, Request{Reason: Overflow}, nil)
	require.ErrorIs(t, err, ErrNoOpenTurn)
	_, err = Compact(s, nil, Request{Reason: Pressure}, nil)
	require.ErrorIs(t, err, ErrNoOpenTurn)
	_, err = Compact(s, nil, Request{Reason: "later"}, nil)
	require.ErrorContains(t, err, `unknown reason "later"`)
}

// A log-only append during summarization is tolerated; a surface change
// fails the bracket as changed.
func TestI99_StabilityAfterSummarization(t *testing.T) {
	b := conversation(t)
	s := b.session()
	s.reply = func(*SummaryRequest) (*SummaryResult, error) {
		b.add(surface.TypeLLMRetry, map[string]any{"turn": 1, "step": 1}, surface.Op{})
		return textResult("## Primary Request and Intent\n- x"), nil
	}
	out, err := Compact(s, nil, Request{Reason: Overflow, Turn: 1}, nil)
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4)
	_, err = s.admit(out.Proposals)
	require.NoError(t, err, "the seqs were taken after the log-only append")

	b = conversation(t)
	s = b.session()
	before := s.l.Nodes()
	s.reply = func(*SummaryRequest) (*SummaryResult, error) {
		b.user("arrived meanwhile")
		return textResult("## Primary Request and Intent\n- x"), nil
	}
	out, err = Compact(s, nil, Request{Reason: Overflow, Turn: 1}, nil)
	require.NoError(t, err)
	require.Contains(t, failedBracket(t, out), "the surface changed during summarization")
	_, err = s.admit(out.Proposals)
	require.NoError(t, err)
	require.Equal(t, append(before, before[len(before)-1]+1), s.l.Nodes())
}

func TestOverflowCounterPerSequence(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"maxOverflowRetries": 1, "maxCompactionsPerWindow": 0}`))
	require.NoError(t, err)
	b := conversation(t)
	s := b.session()
	st := &State{}
	req := Request{Reason: Overflow, Turn: 1}
	out, err := Compact(s, cfg, req, st)
	require.NoError(t, err)
	_, err = s.admit(out.Proposals)
	require.NoError(t, err)
	b.user(words(300))
	out, err = Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Empty(t, out.Proposals)
	require.ErrorContains(t, out.Warning, "1 recovery attempt(s) already made")
	// A model reply ends the sequence.
	b.asst(words(100))
	b.user(words(100))
	out, err = Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4)
	// So does a new turn.
	_, err = s.admit(out.Proposals)
	require.NoError(t, err)
	b.user(words(100))
	req.Turn = 2
	out, err = Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4)
	// maxOverflowRetries 0 disables recovery.
	cfg, err = ParseConfig([]byte(`{"maxOverflowRetries": 0}`))
	require.NoError(t, err)
	out, err = Compact(s, cfg, req, &State{})
	require.NoError(t, err)
	require.Empty(t, out.Proposals)
	require.Nil(t, out.Warning)
}

func TestStateRoundTrip(t *testing.T) {
	st := &State{Attempts: []int64{1, 2, 2, 9}, Warned: []string{"p/m", "q/ü"}, LimitWarned: 7,
		OverflowTurn: 3, OverflowCount: 1, OverflowSeq: 1 << 40}
	back, err := DecodeState(st.Encode())
	require.NoError(t, err)
	require.Equal(t, st, back)
	zero, err := DecodeState(nil)
	require.NoError(t, err)
	require.Equal(t, &State{}, zero)
	back, err = DecodeState((&State{}).Encode())
	require.NoError(t, err)
	require.Equal(t, &State{}, back)
	for _, bad := range [][]byte{{0x01}, {stateMagic}, append(st.Encode(), 0), st.Encode()[:5], {stateMagic, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F}} {
		_, err := DecodeState(bad)
		require.Error(t, err, "%x", bad)
	}
}

func TestEstimator(t *testing.T) {
	for _, tc := range []struct {
		b    surface.Block
		want int64
	}{
		{surface.Text(""), 4},
		{surface.Text("abcd"), 5},
		{surface.Text("abcde"), 6},
		{surface.Text("😀😀"), 5},  // 4 UTF-16 units
		{surface.Text("ééé"), 5}, // 3 units
		{surface.Block{Type: surface.BlockReasoning, Text: "12345678"}, 6},
		{surface.ToolCall("id", "echo", `{"a":1}`), 1 + 2 + 4},
		{surface.ToolResult("c", false, surface.Text("abcd")), 5 + 4},
		{surface.Block{Type: "image", Unknown: []byte(`{"type":"image"}`)}, 4 + 4},
	} {
		require.Equal(t, tc.want, EstimateBlock(&tc.b), "%+v", tc.b)
	}
	require.Equal(t, int64(4+5), EstimateContent([]surface.Block{surface.Text("abcd")}))
	require.Equal(t, int64(0), EstimateNode(surface.TypeSystemMessage, &surface.Message{Role: "system", Content: []surface.Block{}}))
	require.Equal(t, int64(4), EstimateNode(surface.TypeUserMessage, &surface.Message{Role: "user", Content: []surface.Block{}}))
	require.Equal(t, int64(0), EstimateTools(nil))
	require.Equal(t, int64(3+4), EstimateTools([][]byte{[]byte(`{"a":1}`)})) // [{"a":1}] is 9 units
}

func TestI94_NoHeadNoSystemMessage(t *testing.T) {
	b := newBuilder(t).open()
	b.header("p", "m", 0)
	b.user(words(100))
	b.asst(words(100))
	b.user("latest")
	s := b.session()
	out, err := Compact(s, nil, Request{Reason: Overflow, Turn: 1}, nil)
	require.NoError(t, err)
	require.Len(t, out.Proposals, 4)
	require.Len(t, s.calls, 1)
	require.Equal(t, []string{"user", "assistant"}, []string{s.calls[0].Messages[0].Role, s.calls[0].Messages[1].Role})
	require.Len(t, s.calls[0].Messages, 2)
	require.Nil(t, s.calls[0].Tools)
	nodes := s.l.Nodes()
	require.Equal(t, surface.Replace(nodes[0], nodes[1]), out.Proposals[2].Op, "a user head is compactable")
}

// A later pass runs only when some summary could still get below the
// threshold: re-summarizing a checkpoint next to a huge retained tail is
// pointless.
func TestI101_HopelessPassSkipped(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "compactionRetries": 3}`))
	require.NoError(t, err)
	b := newBuilder(t).open()
	b.header("p", "m", 0)
	b.sys("prompt")
	b.user(words(200))
	b.asst(words(200))
	b.user(words(500)) // the retained tail alone is above the threshold
	s := b.session()
	out, err := Compact(s, cfg, Request{Reason: Pressure, Turn: 1, Route: Route{ContextWindow: 1000}}, &State{})
	require.NoError(t, err)
	require.Len(t, s.calls, 1, "one pass, no pointless re-summarization")
	require.Len(t, out.Proposals, 4)
	require.ErrorContains(t, out.Warning, "still above threshold after 1 attempt")
}
