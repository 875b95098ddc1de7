// Package eval replays a recorded session through other plugin sets,
// offline, and reports what each would have sent: requests, input tokens,
// cached prefixes and their breaks, compactions, summarize calls, peak
// surface, plugin time and failures, an estimated cost, and when probed
// text was last visible to the model.
//
// The replay is open-loop. A session's requests are a pure function of
// its log, and plugins are deterministic, so the recorded conversation can
// be pushed through the real loop (host.Agent) with any set of plugins:
// the recorded user inputs per turn, the recorded model replies in request
// order, the recorded tool results in call order, the recorded system
// prompt per step and the recorded request configs. The replies are taken
// as fixed: a set that shows the model less would, in reality, have
// received other replies; the report measures what would have been sent
// for the same conversation, not how the conversation would have gone.
// The baseline's replies carry the recorded usage; every other set's carry
// the usage of its own requests as UsageModel prices them, so its meter
// sees its own sizes.
//
// Nothing reaches the network unless Options.Summaries.Model is set: a
// compaction's summarize call is answered by the recording when it holds
// a summary of the same request (byte for byte), else by a deterministic
// extractive summarizer (Extractive), else, when configured, by a real
// model within a cap on calls.
package eval

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// Recording is what a session log says happened, in the order the replay
// needs it.
type Recording struct {
	SessionID string
	Route     host.Route
	Turns     []Turn
	// Replies are the settled attempts in request order.
	Replies []Reply
	// ToolResults are the tool results in call order.
	ToolResults []ToolResult
	// StepPrompts is the system prompt text in force at each step, in
	// step order (the head after the step's projection).
	StepPrompts []string
	// Requests are the recorded wire bodies of the loop's requests, in
	// order (one per reply), as this build's encoder writes them.
	Requests [][]byte
	// Summaries are the recorded summaries by the hash of their
	// summarization request's wire body.
	Summaries map[[32]byte]Summary
	// CompactAfter is a manual compaction after the last turn.
	CompactAfter bool
	// PromptPlugin is the recorded prompt provider's id (the source of
	// the system messages), "system-prompt" when none is recorded.
	PromptPlugin string
}

// Turn is one recorded turn.
type Turn struct {
	N int64
	// Messages are the appended user-role messages of step 1 (the user's
	// input and any runtime context).
	Messages []*surface.Message
	// CompactBefore is a manual compaction between the previous turn and
	// this one.
	CompactBefore bool
	// FirstReply, EndReply bound the turn's replies; FirstTool, FirstStep
	// are the indexes of its first tool result and step.
	FirstReply, EndReply int
	FirstTool, FirstStep int
	// Reason is how the turn ended; Truncated marks a turn the log ends
	// within (no turn/end: the process stopped), whose Reason is zero.
	Reason    surface.EndReason
	Truncated bool
}

// Reply is one recorded attempt.
type Reply struct {
	Turn, Step int64
	Result     *llm.Result
	// Err is the attempt's failure (assistant/attempt), else nil.
	Err *llm.Error
	// Config and Tools are the request's header; Window is the route's
	// context window then.
	Config surface.CallConfig
	Tools  []jsontext.Value
	Window int64
	// Inject are the user-role messages appended in the next step of the
	// turn (steering), entered after this reply.
	Inject []*surface.Message
}

// ToolResult is one recorded tool result.
type ToolResult struct {
	Name    string
	Content []surface.Block
	IsError bool
}

// Summary is a summarization the recording holds.
type Summary struct {
	Text  string
	Usage *surface.Usage
}

// Record reads a session's events into a Recording. The events must be
// the complete log from seq 0.
func Record(sessionID string, events []surface.Event) (*Recording, error) {
	if len(events) > 0 && events[0].Seq != 0 {
		return nil, fmt.Errorf("eval: the log starts at seq %d; a replay needs the complete log from seq 0", events[0].Seq)
	}
	rec := &Recording{SessionID: sessionID, Route: RecordedRoute(events), Summaries: map[[32]byte]Summary{}}
	var (
		header     surface.Header
		window     int64
		cur        string // the system prompt in force
		turn       *Turn
		step       int64
		pendingCmp bool
		callNames  = map[string]string{}
		summaries  = map[string]string{} // compaction id → summary text
	)
	// fold holds events[:i] at event i: the log each recorded request
	// (at its settlement, as host.Requests rebuilds it) and each recorded
	// summarize call's request are rebuilt from, folded once for the walk.
	fold := surface.New()
	// The walk itself folds the log and reads the small events; what each
	// reply needs from its (large) settlement and the encoding of each
	// request go to a worker, in order, on another goroutine.
	w := newRecordWorker()
	defer w.stop()
	admitted := false // events[i-1] is in the fold already
	for i := range events {
		ev := events[i]
		if i > 0 && !admitted {
			if err := fold.Admit(events[i-1]); err != nil {
				return w.fail(events[i-1].Seq, err)
			}
		}
		admitted = false
		// A message the walk reads is read from the fold, which decodes
		// it once for the walk and the requests after it.
		var msg *surface.Message
		switch ev.Type {
		case surface.TypeSystemMessage, surface.TypeUserMessage, surface.TypeToolResult:
			if err := fold.Admit(ev); err != nil {
				return w.fail(ev.Seq, err)
			}
			admitted = true
			msg, _ = fold.Message(ev.Seq)
		}
		if ev.Type == surface.TypeAssistantMessage || ev.Type == surface.TypeAssistantAttempt {
			h := fold.Header()
			if h == nil {
				_, err := host.BuildRequest(fold, sessionID)
				return w.fail(ev.Seq, fmt.Errorf("the recorded requests do not rebuild: %w", err))
			}
			// host.BuildRequest's request, holding the fold's own messages
			// (immutable once committed, and decoded here), which the
			// worker's cache knows from the last one.
			w.jobs <- recordJob{request: &llm.Request{Config: h.Config, Messages: fold.Messages(), Tools: h.Tools, SessionID: sessionID}, seq: ev.Seq}
			rec.Requests = append(rec.Requests, nil)
			// The settlement's message is read from the fold, which
			// decodes it once for this reply and the requests after it.
			if err := fold.Admit(ev); err != nil {
				return w.fail(ev.Seq, err)
			}
			admitted = true
		}
		switch ev.Type {
		case surface.TypeTurnStart:
			var d struct {
				Turn int64 `json:"turn"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return w.fail(ev.Seq, err)
			}
			rec.Turns = append(rec.Turns, Turn{N: d.Turn, CompactBefore: pendingCmp,
				FirstReply: len(rec.Replies), FirstTool: len(rec.ToolResults), FirstStep: len(rec.StepPrompts)})
			pendingCmp = false
			turn, step = &rec.Turns[len(rec.Turns)-1], 0
		case surface.TypeTurnEnd:
			var d surface.TurnEnd
			if err := json.Unmarshal(ev.Data, &d); err == nil && turn != nil {
				turn.Reason = d.Reason
				turn.EndReply = len(rec.Replies)
			}
			turn = nil
		case surface.TypeStepStart:
			var d struct {
				Step int64 `json:"step"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			step = d.Step
			rec.StepPrompts = append(rec.StepPrompts, cur)
		case surface.TypeSystemMessage:
			if msg == nil {
				return w.fail(ev.Seq, errors.New("the system message is not on the surface"))
			}
			cur = surface.TextOf(msg.Content)
			if rec.PromptPlugin == "" {
				rec.PromptPlugin = msg.Source.Plugin
			}
			if n := len(rec.StepPrompts); n > 0 && turn != nil {
				rec.StepPrompts[n-1] = cur
			}
		case surface.TypeUserMessage:
			if ev.Op.Kind != surface.OpAppend || turn == nil {
				continue
			}
			if msg == nil {
				return w.fail(ev.Seq, errors.New("the user message is not on the surface"))
			}
			if step <= 1 {
				turn.Messages = append(turn.Messages, msg)
			} else if n := len(rec.Replies); n > turn.FirstReply {
				rec.Replies[n-1].Inject = append(rec.Replies[n-1].Inject, msg)
			}
		case surface.TypeRequestHeader:
			var d surface.HeaderEvent
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return w.fail(ev.Seq, err)
			}
			header = d.Header
		case surface.TypeRequestContext:
			var d host.RequestContext
			if err := json.Unmarshal(ev.Data, &d); err == nil {
				window = d.ContextWindow
			}
		case surface.TypeAssistantMessage, surface.TypeAssistantAttempt:
			m, _ := fold.Message(ev.Seq)
			w.jobs <- recordJob{reply: ev, message: m, seq: ev.Seq}
			rec.Replies = append(rec.Replies, Reply{Config: header.Config, Tools: header.Tools, Window: window})
		case surface.TypeToolCall:
			var d struct {
				ID   string `json:"callId"`
				Name string `json:"name"`
			}
			if json.Unmarshal(ev.Data, &d) == nil {
				callNames[d.ID] = d.Name
			}
		case surface.TypeToolResult:
			if ev.Op.Kind != surface.OpAppend {
				continue
			}
			if msg == nil {
				return w.fail(ev.Seq, errors.New("the tool result is not on the surface"))
			}
			tr := ToolResult{}
			for _, b := range msg.Content {
				if b.Type == surface.BlockToolResult {
					tr.Name, tr.Content, tr.IsError = callNames[b.ToolCallID], b.Content, b.IsError
					break
				}
			}
			rec.ToolResults = append(rec.ToolResults, tr)
		case surface.TypeCompactionStart:
			var d struct {
				Turn *int64 `json:"turn"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && d.Turn == nil && turn == nil {
				pendingCmp = true
			}
		case surface.TypeCompactionSummary:
			var d struct {
				ID      string `json:"compactionId"`
				Summary string `json:"summary"`
			}
			if json.Unmarshal(ev.Data, &d) == nil {
				summaries[d.ID] = d.Summary
			}
		case host.TypePluginCall:
			var d host.PluginCall
			if json.Unmarshal(ev.Data, &d) != nil || d.Outcome != "ok" {
				continue
			}
			text, ok := summaries[d.CompactionID]
			if !ok {
				continue
			}
			req, err := host.CallRequestIn(fold, events, ev.Seq, sessionID)
			if err != nil {
				continue
			}
			key, err := requestKey(req)
			if err == nil {
				rec.Summaries[key] = Summary{Text: text, Usage: d.Usage}
			}
		}
	}
	if err := w.finish(rec); err != nil {
		return nil, err
	}
	if turn != nil {
		// The log ends within a turn (the process stopped): the turn has
		// the replies recorded so far and no ending.
		turn.EndReply = len(rec.Replies)
		turn.Truncated = true
	}
	rec.CompactAfter = pendingCmp
	if rec.PromptPlugin == "" {
		rec.PromptPlugin = "system-prompt"
	}
	if len(rec.Replies) != len(rec.Requests) {
		return nil, fmt.Errorf("eval: %d replies but %d rebuilt requests", len(rec.Replies), len(rec.Requests))
	}
	return rec, nil
}

// recordJob is a request to encode or a settlement to read.
type recordJob struct {
	request *llm.Request
	reply   surface.Event
	message *surface.Message // the settlement's, nil for an attempt
	seq     int64
}

// recordWorker encodes the recorded requests and reads the settlements
// in log order, one job at a time, beside the walk that folds the log.
type recordWorker struct {
	jobs     chan recordJob
	done     chan struct{}
	requests [][]byte
	replies  []Reply // Turn, Step, Result and Err
	err      error   // the first failure, with the seq it names
	errSeq   int64
}

func newRecordWorker() *recordWorker {
	w := &recordWorker{jobs: make(chan recordJob, 64), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *recordWorker) run() {
	defer close(w.done)
	var enc llm.EncodeCache
	for j := range w.jobs {
		if w.err != nil {
			continue
		}
		if j.request != nil {
			body, err := enc.EncodeRequest(j.request)
			if err != nil {
				w.err, w.errSeq = fmt.Errorf("eval: request at seq %d: %w", j.seq, err), j.seq
			}
			w.requests = append(w.requests, body)
			continue
		}
		r, err := reply(j.reply, j.message)
		if err != nil {
			w.err, w.errSeq = err, j.seq
		}
		w.replies = append(w.replies, r)
	}
}

// stop ends the worker once it has done the jobs sent (a no-op once it
// has ended).
func (w *recordWorker) stop() {
	select {
	case <-w.done:
	default:
		close(w.jobs)
		<-w.done
	}
}

// fail ends the walk at seq with err, unless the worker failed at an
// earlier seq: the error is the one a walk in one goroutine would meet
// first.
func (w *recordWorker) fail(seq int64, err error) (*Recording, error) {
	w.stop()
	if w.err != nil && w.errSeq < seq {
		return nil, w.err
	}
	return nil, fmt.Errorf("eval: seq %d: %w", seq, err)
}

// finish waits for the worker and completes rec's requests and replies
// with what it made.
func (w *recordWorker) finish(rec *Recording) error {
	w.stop()
	if w.err != nil {
		return w.err
	}
	copy(rec.Requests, w.requests)
	for i, r := range w.replies {
		p := &rec.Replies[i]
		p.Turn, p.Step, p.Result, p.Err = r.Turn, r.Step, r.Result, r.Err
	}
	return nil
}

// RecordedRoute is the route a recording of events replays on (its
// Recording.Route), read from the request headers and contexts alone: the
// first header that names a provider gives the provider, the model and
// the output cap, the first context window after it the window, and any
// in-history prompt update makes the route's updates in history. A caller
// can load a set's plugins for it while Record reads the rest.
func RecordedRoute(events []surface.Event) host.Route {
	var r host.Route
	for i := range events {
		switch ev := &events[i]; ev.Type {
		case surface.TypeRequestHeader:
			var d surface.HeaderEvent
			if r.Provider != "" || json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			c := d.Header.Config
			r = host.Route{Provider: c.Provider, Model: c.Model}
			if c.MaxTokens != nil {
				r.MaxTokens = *c.MaxTokens
			}
		case surface.TypeRequestContext:
			var d host.RequestContext
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			if r.ContextWindow == 0 {
				r.ContextWindow = d.ContextWindow
			}
			if d.SystemPromptUpdate == "in-history" {
				r.InHistory = true
			}
		}
	}
	return r
}

// reply reads settlement ev's turn, step, result and failure; m is its
// message (nil for an attempt).
func reply(ev surface.Event, m *surface.Message) (Reply, error) {
	var d struct {
		Turn   int64          `json:"turn"`
		Step   int64          `json:"step"`
		Stream jsontext.Value `json:"stream"`
		Usage  *surface.Usage `json:"usage"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return Reply{}, fmt.Errorf("eval: seq %d: %w", ev.Seq, err)
	}
	r := Reply{Turn: d.Turn, Step: d.Step}
	if ev.Type == surface.TypeAssistantAttempt {
		res, info, err := llm.ReassembleInfo(d.Stream)
		if err != nil || res == nil {
			res = &llm.Result{Stream: d.Stream}
		}
		code := info.Code
		if code == "" {
			code = llm.CodeServer
		}
		r.Err = &llm.Error{Code: code, What: "the recorded attempt failed: " + info.Message}
		r.Result = &llm.Result{Content: res.Content, Stream: d.Stream}
		return r, nil
	}
	// The log's message is authoritative; the stream gives the finish.
	if m == nil {
		return Reply{}, fmt.Errorf("eval: seq %d: the assistant message is not on the surface", ev.Seq)
	}
	// Only the finish is read from the stream (an unreadable one has
	// none), not the content it would assemble.
	res := &llm.Result{Content: slices.Clone(m.Content), Usage: d.Usage, Stream: d.Stream}
	if finish, _, err := llm.FinishOf(d.Stream); err == nil {
		res.FinishReason = finish
	}
	if res.FinishReason == "" {
		res.FinishReason = llm.FinishStop
		if len(res.ToolCalls()) > 0 {
			res.FinishReason = llm.FinishToolCalls
		}
	}
	r.Result = res
	return r, nil
}

// requestKey identifies a summarization request by its wire body, as
// this build encodes it.
func requestKey(req *llm.Request) ([32]byte, error) {
	r := *req
	r.Encoder = 0 // this build's, as a replayed request's (see Record)
	body, err := llm.EncodeRequest(&r)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(body), nil
}

// Tools returns the distinct tool names of the recording's headers.
func (r *Recording) Tools() []string {
	var names []string
	for _, rp := range r.Replies {
		for _, t := range rp.Tools {
			var s struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(t, &s) == nil && !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

func sameTools(a, b []jsontext.Value) bool {
	return slices.EqualFunc(a, b, func(x, y jsontext.Value) bool { return bytes.Equal(x, y) })
}
