package inspect

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/surface"
)

// Item kinds of a trajectory.
const (
	ItemTurn       = "turn"
	ItemStep       = "step"
	ItemMessage    = "message"
	ItemTool       = "tool"
	ItemPrompt     = "prompt"
	ItemCompaction = "compaction"
	ItemFailure    = "failure"
	ItemAttempt    = "attempt"
	ItemRetry      = "retry"
	ItemTurnEnd    = "turn-end"
	ItemRewrite    = "rewrite"
	ItemOther      = "event"
)

// LongResult is the length (bytes) past which a tool result is collapsed.
const LongResult = 400

// Item is one entry of a session's trajectory, in log order.
type Item struct {
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	Type string `json:"type"`
	Turn int64  `json:"turn,omitzero"`
	Step int64  `json:"step,omitzero"`
	// Time is the event's time (epoch ms). Duration is a turn's or step's
	// wall time, from its start to its end event (zero while it is open);
	// Wall a settlement's, from the event before it (the log holds no
	// dispatch instant: that is when the host last wrote before the
	// request).
	Time     int64 `json:"time"`
	Duration int64 `json:"durationMs,omitzero"`
	Wall     int64 `json:"wallMs,omitzero"`
	// A settlement's dispatch instant (epoch ms) and time to first token,
	// when its stream record holds them (see timeReply); Wall is then
	// from the dispatch. A turn's Usage sums its requests'.
	Sent  int64  `json:"sentMs,omitzero"`
	First *int64 `json:"firstTokenMs,omitzero"`
	// Message items: the role, the text, reasoning and tool calls.
	Role      string     `json:"role,omitzero"`
	Text      string     `json:"text,omitzero"`
	Reasoning []string   `json:"reasoning,omitzero"`
	Calls     []ToolCall `json:"toolCalls,omitzero"`
	// Request is the request index (1-based) a settlement answers.
	Request     int            `json:"request,omitzero"`
	Usage       *surface.Usage `json:"usage,omitzero"`
	Interrupted bool           `json:"interrupted,omitzero"`
	// Tool results.
	ToolName string `json:"toolName,omitzero"`
	CallID   string `json:"callId,omitzero"`
	IsError  bool   `json:"isError,omitzero"`
	Long     bool   `json:"long,omitzero"`
	// Synthetic marks a result written by crash repair.
	Synthetic  bool                `json:"synthetic,omitzero"`
	Prompt     *PromptEvent        `json:"prompt,omitzero"`
	Compaction *Compaction         `json:"compaction,omitzero"`
	Failure    *host.PluginFailure `json:"failure,omitzero"`
	// Note is the text of turn ends, retries, attempts and other events.
	Note string `json:"note,omitzero"`
}

// ToolCall is one tool-call block of an assistant message.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Compaction is one compaction, gathered from its compaction/* events, its
// checkpoint and its plugin/call records.
type Compaction struct {
	ID           string  `json:"compactionId"`
	Start        int64   `json:"startSeq"`
	End          int64   `json:"endSeq,omitzero"`
	Trigger      string  `json:"trigger,omitzero"`
	RangeStart   int64   `json:"rangeStart,omitzero"`
	RangeEnd     int64   `json:"rangeEnd,omitzero"`
	Shadowed     []int64 `json:"shadowedSeqs,omitzero"`
	TokenCount   int64   `json:"shadowedTokenCount,omitzero"`
	Provider     string  `json:"provider,omitzero"`
	Model        string  `json:"model,omitzero"`
	Checkpoint   int64   `json:"checkpointSeq,omitzero"`
	Plugin       string  `json:"plugin,omitzero"`
	Text         string  `json:"checkpointText,omitzero"`
	Error        string  `json:"error,omitzero"`
	TokensBefore int64   `json:"tokensBefore,omitzero"`
	TokensAfter  int64   `json:"tokensAfter,omitzero"`
	Calls        []int64 `json:"callSeqs,omitzero"`
}

// Summary is a session's line on the sessions page.
type Summary struct {
	Name         string `json:"name"`
	ID           string `json:"session"`
	Turns        int64  `json:"turns"`
	Events       int    `json:"events"`
	Nodes        int    `json:"surfaceNodes"`
	Tokens       int64  `json:"tokens"`
	LastActivity int64  `json:"lastActivity"` // epoch ms of the last event
	Requests     int    `json:"requests"`
	Compactions  int    `json:"compactions"`
	Error        string `json:"error,omitzero"`
	// Pending marks a session not indexed yet: only its name, id and the
	// file's modification time (as LastActivity) are known.
	Pending bool `json:"pending,omitzero"`
}

// Model is everything the pages show of one session, built in one pass.
type Model struct {
	Session *Session
	// Items are the trajectory's entries. Build classifies every event but
	// leaves message content undecoded; Fill completes the items a page
	// shows, so the first screen of a long session does not wait for all
	// of them.
	Items []Item
	// Requests are the settlement seqs of every dispatched attempt, in
	// order (request i+1 is Requests[i]).
	Requests    []int64
	Compactions []*Compaction
	Prompts     []PromptEvent
	Summary     Summary
	// Window is the latest context window a request/context reported.
	Window int64
	// Threshold is the compaction threshold of compaction-basic's default
	// policy for the latest route (the configured policy is not logged);
	// ThresholdNote says how it was derived.
	Threshold     int64
	ThresholdNote string

	mu        sync.Mutex // the log decodes messages lazily: one reader at a time
	callNames map[string]string
	b         builder

	reqMu sync.Mutex
	reqs  []*builtRequest // the latest built, last

	meter tokenTrack

	// turns sums, by turn, the usage the provider reported for the
	// turn's requests (a turn none of whose requests reported any has
	// no entry); the fold keeps it.
	turns map[int64]*surface.Usage
}

// Fill returns copies of items with their message content decoded.
func (m *Model) Fill(items []Item) []Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(items)
	l := m.Session.Log
	for i := range out {
		it := &out[i]
		switch it.Kind {
		case ItemMessage:
			msg, _ := l.Message(it.Seq)
			it.Role = roleOf(msg)
			fillMessage(it, msg)
			if it.Type == surface.TypeAssistantMessage {
				e, _ := l.Event(it.Seq)
				var d surface.StepMessage
				if json.Unmarshal(e.Data, &d) == nil {
					it.Usage, it.Interrupted = d.Usage, d.Interrupted
					timeReply(&it.First, &it.Sent, &it.Wall, e.Time, d.Stream)
				}
			}
		case ItemAttempt:
			e, _ := l.Event(it.Seq)
			timeReply(&it.First, &it.Sent, &it.Wall, e.Time, streamOf(e.Data))
		case ItemTurn:
			it.Usage = m.turns[it.Turn]
		case ItemTool:
			msg, _ := l.Message(it.Seq)
			if msg != nil && len(msg.Content) > 0 {
				b := msg.Content[0]
				it.CallID, it.IsError, it.Text = b.ToolCallID, b.IsError, surface.TextOf(b.Content)
				it.ToolName = m.callNames[b.ToolCallID]
				if it.ToolName == "" {
					it.ToolName = m.callName(it.Seq, b.ToolCallID)
				}
			}
			e, _ := l.Event(it.Seq)
			var d struct {
				Error *surface.ToolError `json:"error"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.Error != nil {
				it.Note = d.Error.Code
				if d.Error.Reason != "" {
					it.Note += ": " + d.Error.Reason
				}
				it.Synthetic = d.Error.Code == "TOOL_OUTCOME_UNKNOWN" || d.Error.Code == "TOOL_NOT_STARTED"
			}
			it.Long = len(it.Text) > LongResult || strings.Count(it.Text, "\n") > 8
		case ItemRewrite:
			msg, _ := l.Message(it.Seq)
			it.Role, it.Text = roleOf(msg), textOf(msg)
		}
	}
	return out
}

// Filter selects trajectory items: by kind, by a message's role, by text
// (case-insensitive, in the item's text, note, tool name and arguments,
// prompt and failure). Empty fields select everything.
type Filter struct {
	Kind, Role, Text string
}

func (f Filter) none() bool { return f.Kind == "" && f.Role == "" && f.Text == "" }

// query is the filter as URL query parameters, each after a "&".
func (f Filter) query() string {
	var b strings.Builder
	for _, kv := range [][2]string{{"kind", f.Kind}, {"role", f.Role}, {"q", f.Text}} {
		if kv[1] != "" {
			b.WriteString("&" + kv[0] + "=" + url.QueryEscape(kv[1]))
		}
	}
	return b.String()
}

// filterKinds are the kinds the trajectory's filter offers.
var filterKinds = []string{ItemMessage, ItemTool, ItemPrompt, ItemCompaction, ItemFailure, ItemAttempt, ItemRetry, ItemTurnEnd, ItemRewrite, ItemOther}

// Filter returns the items f selects, in order. Text is matched on items
// decoded a thousand at a time, so the log's text is never all held at
// once.
func (m *Model) Filter(f Filter) []Item {
	needle := strings.ToLower(f.Text)
	var out []Item
	for i := 0; i < len(m.Items); i += 1000 {
		chunk := m.Items[i:min(len(m.Items), i+1000)]
		var filled []Item
		if f.Role != "" || needle != "" {
			filled = m.Fill(chunk)
		}
		for k, it := range chunk {
			if f.Kind != "" && it.Kind != f.Kind {
				continue
			}
			if filled != nil {
				x := filled[k]
				if f.Role != "" && x.Role != f.Role {
					continue
				}
				if needle != "" && !x.matches(needle) {
					continue
				}
			}
			out = append(out, it)
		}
	}
	return out
}

func (it *Item) matches(needle string) bool {
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), needle) }
	if has(it.Text) || has(it.Note) || has(it.ToolName) || has(it.Type) {
		return true
	}
	for _, c := range it.Calls {
		if has(c.Name) || has(c.Arguments) {
			return true
		}
	}
	for _, r := range it.Reasoning {
		if has(r) {
			return true
		}
	}
	if it.Prompt != nil && has(it.Prompt.Text) {
		return true
	}
	if it.Failure != nil && (has(it.Failure.Error) || has(it.Failure.Plugin)) {
		return true
	}
	return it.Compaction != nil && (has(it.Compaction.Text) || has(it.Compaction.Trigger))
}

// Text returns the whole text of the message or tool result at seq, as the
// trajectory shows it (a prompt card's prompt, a checkpoint's summary).
func (m *Model) Text(seq int64) (string, bool) {
	i := sort.Search(len(m.Items), func(i int) bool { return m.Items[i].Seq >= seq })
	for ; i < len(m.Items) && m.Items[i].Seq == seq; i++ {
		switch it := m.Items[i]; it.Kind {
		case ItemPrompt:
			return it.Prompt.Text, true
		case ItemMessage, ItemTool, ItemRewrite:
			return m.Fill(m.Items[i : i+1])[0].Text, true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	msg, ok := m.Session.Log.Message(seq)
	if !ok || msg == nil {
		return "", false
	}
	return textOf(msg), true
}

// callName finds the name of a tool call no tool/call event recorded (a
// call that never started) in the assistant message before the result.
func (m *Model) callName(seq int64, id string) string {
	l := m.Session.Log
	for s := seq - 1; s >= 0 && s >= seq-1000; s-- {
		e, _ := l.Event(s)
		if e.Type != surface.TypeAssistantMessage {
			continue
		}
		msg, _ := l.Message(s)
		if msg == nil {
			continue
		}
		for _, b := range msg.Content {
			if b.Type == surface.BlockToolCall && b.ID == id {
				return b.Name
			}
		}
	}
	return ""
}

// Tokens is the meter's measurement of the session's current surface,
// computed on first use (nil when the meter cannot price the log).
func (m *Model) Tokens() *host.Measurement {
	t := &m.meter
	t.mu.Lock()
	defer t.mu.Unlock()
	m.priced()
	return t.end
}

// Build reads a session into its model.
func Build(s *Session) *Model {
	m := &Model{Session: s, callNames: map[string]string{}}
	m.b = builder{comps: map[string]*Compaction{}, pt: NewPromptTracker(), turnSeq: -1, stepSeq: -1}
	m.Items = make([]Item, 0, s.Log.Len())
	m.fold()
	return m
}

// builder is the state of a model's fold between two reads of its log: a
// log that grew is folded on from where the last fold stopped.
type builder struct {
	next             int // events folded
	comps            map[string]*Compaction
	pt               *PromptTracker
	turn, step       int64
	provider, model  string
	turnSeq, stepSeq int64   // the open turn's and step's items, -1 when none
	open             []int64 // the items shown for compactions not ended
}

// Advance folds the events the session's log gained since the model was
// built (or last advanced) into it: the same model Build gives for the
// whole log. The caller holds the model exclusively (no page reads it).
func (m *Model) Advance() {
	if m.b.next == m.Session.Log.Len() {
		return
	}
	m.fold()
	m.reqMu.Lock()
	for _, b := range m.reqs {
		if b.r != nil && b.r.Count != len(m.Requests) {
			r := *b.r
			r.Count = len(m.Requests)
			b.r = &r
		}
	}
	m.reqMu.Unlock()
}

// at returns the position of the item at seq (the first one there).
func (m *Model) at(seq int64) (int, bool) {
	return slices.BinarySearchFunc(m.Items, seq, func(it Item, s int64) int { return cmpInt(it.Seq, s) })
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fold folds the log's events from m.b.next on.
func (m *Model) fold() {
	l, b := m.Session.Log, &m.b
	events := l.Events()
	// The items of compactions open at the last fold go: one that ended
	// since shows at its end, one still open is shown again below.
	for _, seq := range b.open {
		if i, ok := m.at(seq); ok {
			m.Items = slices.Delete(m.Items, i, i+1)
		}
	}
	b.open = b.open[:0]
	comps := b.comps
	if m.turns == nil {
		m.turns = map[int64]*surface.Usage{}
	}
	for k := b.next; k < len(events); k++ {
		e := events[k]
		var msg *surface.Message
		if e.Type == surface.TypeSystemMessage || e.Op.Kind == surface.OpReplace {
			msg, _ = l.Message(e.Seq)
		}
		if p, ok := b.pt.Observe(e, msg); ok {
			p := p
			m.Prompts = append(m.Prompts, p)
			m.Items = append(m.Items, Item{Seq: e.Seq, Kind: ItemPrompt, Type: e.Type, Turn: b.turn, Step: b.step, Prompt: &p})
			continue
		}
		it := Item{Seq: e.Seq, Type: e.Type, Turn: b.turn, Step: b.step, Time: e.Time}
		switch e.Type {
		case surface.TypeTurnStart:
			var d host.StepRef
			_ = json.Unmarshal(e.Data, &d)
			b.turn, b.step = d.Turn, 0
			it.Kind, it.Turn = ItemTurn, b.turn
			b.turnSeq, b.stepSeq = e.Seq, -1
		case surface.TypeStepStart:
			var d host.StepRef
			_ = json.Unmarshal(e.Data, &d)
			b.step = d.Step
			it.Kind, it.Step = ItemStep, b.step
			b.stepSeq = e.Seq
		case surface.TypeStepEnd:
			if i, ok := m.at(b.stepSeq); ok && b.stepSeq >= 0 {
				m.Items[i].Duration = max(0, e.Time-m.Items[i].Time)
			}
			b.stepSeq = -1
			continue
		case surface.TypeTurnEnd:
			if i, ok := m.at(b.turnSeq); ok && b.turnSeq >= 0 {
				m.Items[i].Duration = max(0, e.Time-m.Items[i].Time)
			}
			b.turnSeq = -1
			var d surface.TurnEnd
			_ = json.Unmarshal(e.Data, &d)
			if d.Reason.Kind == surface.EndCompleted {
				continue
			}
			it.Kind, it.Note = ItemTurnEnd, d.Reason.Kind
			if d.Reason.Reason != "" {
				it.Note += ": " + d.Reason.Reason
			}
			if d.Reason.Error != nil {
				it.Note += ": " + d.Reason.Error.Message + " (" + d.Reason.Error.Code + ")"
			}
		case surface.TypeToolCall:
			var d host.ToolCallData
			if json.Unmarshal(e.Data, &d) == nil {
				m.callNames[d.CallID] = d.Name
			}
			continue
		case surface.TypeRequestHeader, surface.TypeEndSeed:
			continue
		case surface.TypeRequestContext:
			var d struct {
				Provider string `json:"provider"`
				Model    string `json:"model"`
				Window   int64  `json:"contextWindow"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.Window > 0 {
				m.Window, b.provider, b.model = d.Window, d.Provider, d.Model
			}
			continue
		case surface.TypeUserMessage, surface.TypeAssistantMessage:
			if e.Op.Kind == surface.OpReplace {
				if id, plugin, ok := host.CheckpointOf(l, e.Seq); ok && comps[id] != nil {
					c := comps[id]
					c.Checkpoint, c.Plugin, c.RangeStart, c.RangeEnd = e.Seq, plugin, e.Op.Start, e.Op.End
					c.Text = textOf(msg)
					continue
				}
				it.Kind, it.Note = ItemRewrite, rangeNote(e)
				break
			}
			it.Kind = ItemMessage
			if e.Type == surface.TypeAssistantMessage {
				m.Requests = append(m.Requests, e.Seq)
				it.Request = len(m.Requests)
				it.Wall = wall(events, k)
				m.addUsage(b.turn, e.Data)
			}
		case surface.TypeAssistantAttempt:
			m.Requests = append(m.Requests, e.Seq)
			m.addUsage(b.turn, e.Data)
			it.Kind, it.Request, it.Note = ItemAttempt, len(m.Requests), "the attempt failed; nothing was committed to the surface"
			it.Wall = wall(events, k)
		case surface.TypeToolResult:
			it.Kind = ItemTool
			if e.Op.Kind == surface.OpReplace {
				it.Kind, it.Note = ItemRewrite, rangeNote(e)
			}
		case surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd:
			c := compactionEvent(comps, e, &m.Compactions)
			if c == nil || e.Type != surface.TypeCompactionEnd {
				continue
			}
			it.Kind, it.Compaction = ItemCompaction, c
		case surface.TypePluginFailure:
			var f host.PluginFailure
			if json.Unmarshal(e.Data, &f) != nil {
				continue
			}
			it.Kind, it.Failure = ItemFailure, &f
		case surface.TypeLLMRetry:
			var d struct {
				Retry   int64             `json:"retry"`
				WaitMs  int64             `json:"waitMs"`
				Failure surface.CallError `json:"failure"`
				Note    string            `json:"note"`
			}
			it.Kind, it.Note = ItemRetry, compactJSON(e.Data)
			if json.Unmarshal(e.Data, &d) == nil && d.Retry > 0 {
				it.Note = fmt.Sprintf("retry %d after %d ms: %s", d.Retry, d.WaitMs, d.Failure.Message)
				if d.Failure.Code != "" {
					it.Note += " (" + d.Failure.Code + ")"
				}
				if d.Note != "" {
					it.Note += "; " + d.Note
				}
			}
		case host.TypePluginCall:
			var d struct {
				ID     string `json:"compactionId"`
				Reason string `json:"reason"`
			}
			if json.Unmarshal(e.Data, &d) == nil && comps[d.ID] != nil {
				c := comps[d.ID]
				c.Calls = append(c.Calls, e.Seq)
				if c.Trigger == "" {
					c.Trigger = d.Reason
				}
			}
			continue
		default:
			it.Kind, it.Note = ItemOther, compactJSON(e.Data)
		}
		if it.Kind == "" {
			continue
		}
		m.Items = append(m.Items, it)
	}
	b.next = len(events)
	// A compaction that never ended shows where it started. Only the
	// latest compactions can be open: search from the end.
	for i := len(m.Compactions) - 1; i >= 0; i-- {
		c := m.Compactions[i]
		if c.End != 0 {
			continue
		}
		j, _ := m.at(c.Start)
		m.Items = slices.Insert(m.Items, j, Item{Seq: c.Start, Kind: ItemCompaction, Type: surface.TypeCompactionStart, Compaction: c})
		b.open = append(b.open, c.Start)
	}
	m.threshold()
	name := m.Summary.Name
	m.Summary = Summary{Name: name, ID: m.Session.ID, Turns: l.LastTurn(), Events: l.Len(), Nodes: l.NodeCount(),
		Requests: len(m.Requests), Compactions: len(m.Compactions)}
	if n := len(events); n > 0 {
		m.Summary.LastActivity = events[n-1].Time
	}
}

// threshold sets the compaction threshold the chart draws.
func (m *Model) threshold() {
	if m.Window <= 0 {
		return
	}
	var maxTokens int64
	if h := m.Session.Log.Header(); h != nil && h.Config.MaxTokens != nil {
		maxTokens = *h.Config.MaxTokens
	}
	provider, model := m.b.provider, m.b.model
	cfg := compact.DefaultConfig()
	pol := cfg.For(provider, model)
	if spec, err := compact.ResolveSpec(pol, provider, model, m.Window, maxTokens); err == nil {
		m.Threshold = spec.ThresholdTokens
		m.ThresholdNote = "compaction-basic's default policy"
	} else {
		// The default headroom does not fit a small window: the ratio
		// alone bounds the threshold.
		m.Threshold = int64(float64(m.Window) * pol.ThresholdRatio)
		m.ThresholdNote = fmt.Sprintf("%g × the window; the session's own policy is not in the log", pol.ThresholdRatio)
	}
}

// wall is a settlement's wall time: from the event before it.
func wall(events []surface.Event, k int) int64 {
	if k == 0 {
		return 0
	}
	return max(0, events[k].Time-events[k-1].Time)
}

func compactionEvent(comps map[string]*Compaction, e surface.Event, order *[]*Compaction) *Compaction {
	var d struct {
		ID           string  `json:"compactionId"`
		Trigger      string  `json:"trigger"`
		Reason       string  `json:"reason"`
		Shadowed     []int64 `json:"shadowedSeqs"`
		TokenCount   int64   `json:"shadowedTokenCount"`
		Provider     string  `json:"provider"`
		Model        string  `json:"model"`
		Error        string  `json:"error"`
		TokensBefore int64   `json:"tokensBefore"`
		TokensAfter  int64   `json:"tokensAfter"`
		Range        *struct {
			Start int64 `json:"start"`
			End   int64 `json:"end"`
		} `json:"shadowedRange"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	c := comps[d.ID]
	if c == nil {
		c = &Compaction{ID: d.ID, Start: e.Seq}
		comps[d.ID] = c
		*order = append(*order, c)
	}
	if t := cmpOr(d.Trigger, d.Reason); t != "" {
		c.Trigger = t
	}
	switch e.Type {
	case surface.TypeCompactionSummary:
		c.Shadowed, c.TokenCount, c.Provider, c.Model = d.Shadowed, d.TokenCount, d.Provider, d.Model
		if d.Range != nil {
			c.RangeStart, c.RangeEnd = d.Range.Start, d.Range.End
		}
	case surface.TypeCompactionEnd:
		c.End, c.Error, c.TokensBefore, c.TokensAfter = e.Seq, d.Error, d.TokensBefore, d.TokensAfter
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func rangeNote(e surface.Event) string {
	return "replaced seq " + itoa(e.Op.Start) + ".." + itoa(e.Op.End)
}

func roleOf(m *surface.Message) string {
	if m == nil {
		return ""
	}
	return m.Role
}

func textOf(m *surface.Message) string {
	if m == nil {
		return ""
	}
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case surface.BlockText:
			parts = append(parts, b.Text)
		case surface.BlockToolResult:
			parts = append(parts, surface.TextOf(b.Content))
		case surface.BlockToolCall:
			parts = append(parts, "→ "+b.Name+"("+b.Arguments+")")
		case surface.BlockReasoning:
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "")
}

func fillMessage(it *Item, m *surface.Message) {
	if m == nil {
		return
	}
	var text []string
	for _, b := range m.Content {
		switch b.Type {
		case surface.BlockText:
			text = append(text, b.Text)
		case surface.BlockReasoning:
			it.Reasoning = append(it.Reasoning, b.Text)
		case surface.BlockToolCall:
			it.Calls = append(it.Calls, ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Arguments})
		default:
			text = append(text, "["+b.Type+"]")
		}
	}
	it.Text = strings.Join(text, "")
}

func compactJSON(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// newMeter is the token meter the inspector prices surfaces with: the
// host's native meter with its default routes.
func newMeter() (*native.Meter, error) {
	return native.New(meterConfig())
}

func meterConfig() meter.Config {
	return meter.Config{Routes: map[string]string{"deepseek": meter.DeepSeekV3}, Fallback: meter.Heuristic,
		Counters: native.Counters(), Reassemble: native.Reassemble}
}

// tokenTrack is the meter's one pass over a model's log: it folds the
// events in order and, as it reaches a request's settlement, measures the
// context that request carried; at the end of the log it measures the
// current surface. A log that grew is priced on from where it stopped.
type tokenTrack struct {
	mu     sync.Mutex
	mt     *meter.Meter // nil when the meter cannot be built
	made   bool
	next   int   // events folded
	turn   int64 // the latest turn/start's turn
	points []Point
	end    *host.Measurement // of the current surface; nil when it cannot be priced
}

// priced brings the track up to the model's log; m.meter.mu is held.
func (m *Model) priced() {
	t := &m.meter
	events := m.Session.Log.Events()
	if t.made && t.next == len(events) {
		return
	}
	if !t.made {
		t.made = true
		t.mt, _ = meter.New(meterConfig())
		t.points = make([]Point, 0, len(m.Requests))
	}
	for i := t.next; i < len(events); i++ {
		e := &events[i]
		if e.Type == surface.TypeTurnStart {
			var d struct {
				Turn int64 `json:"turn"`
			}
			_ = json.Unmarshal(e.Data, &d)
			t.turn = d.Turn
		}
		if k := len(t.points); k < len(m.Requests) && e.Seq == m.Requests[k] {
			p := Point{Index: k + 1, Seq: e.Seq, Turn: t.turn, Failed: e.Type == surface.TypeAssistantAttempt}
			if t.mt != nil {
				if got, err := t.mt.MeasureTotals(nil); err == nil {
					p.Tokens, p.Breakdown, p.Tokenizer = got.TotalTokens, host.Breakdown(got.Breakdown), got.Tokenizer
				}
			}
			var d surface.StepMessage
			if json.Unmarshal(e.Data, &d) == nil {
				p.Usage = d.Usage
			}
			t.points = append(t.points, p)
		}
		if t.mt != nil {
			// A meter stopped at an event stays there: every later
			// measurement fails, as a fresh pass would.
			_ = t.mt.Observe(*e)
		}
	}
	t.next, t.end = len(events), nil
	if t.mt != nil {
		if got, err := t.mt.MeasureTotals(nil); err == nil {
			t.end = native.Convert(got)
		}
	}
}

// Point is one request on the tokens-over-time chart.
type Point struct {
	Index int   `json:"request"`
	Seq   int64 `json:"seq"` // the settlement
	Turn  int64 `json:"turn"`
	// Tokens is the meter's total for the request's context; Breakdown
	// splits it.
	Tokens    int64          `json:"tokens"`
	Breakdown host.Breakdown `json:"breakdown"`
	Tokenizer string         `json:"tokenizer,omitzero"`
	// Usage is what the provider reported for the answer, when it did.
	Usage  *surface.Usage `json:"usage,omitzero"`
	Failed bool           `json:"failed,omitzero"`
}

// Mark is a compaction or prompt change on the chart, at a seq.
type Mark struct {
	Seq   int64  `json:"seq"`
	Kind  string `json:"kind"` // "compaction" or "prompt"
	Label string `json:"label"`
}

// Chart prices the context of every request with the token meter in one
// pass over the log: each point is measured as the pass reaches its
// settlement. The pass is made once per model and carried on over what
// the log gains; callers must not change what it returns.
func (m *Model) Chart() ([]Point, []Mark) {
	t := &m.meter
	t.mu.Lock()
	m.priced()
	points := t.points[:len(t.points):len(t.points)]
	t.mu.Unlock()
	var marks []Mark
	for _, c := range m.Compactions {
		marks = append(marks, Mark{Seq: cmpSeq(c), Kind: "compaction", Label: "compaction " + c.ID})
	}
	for _, p := range m.Prompts {
		if p.Kind == PromptChanged || p.Kind == PromptUpdated {
			marks = append(marks, Mark{Seq: p.Seq, Kind: "prompt", Label: p.Label()})
		}
	}
	return points, marks
}

func cmpSeq(c *Compaction) int64 {
	if c.End > 0 {
		return c.End
	}
	return c.Start
}
