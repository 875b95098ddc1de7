// Package loggen generates large, realistic session logs for tests and
// benchmarks. Every event is admitted through surface.Log.Append, so a
// generated log is valid by construction, and the output is a pure function
// of the Config: the same Config always yields byte-identical events.
//
// A generated session is a sequence of turns in the loop's commit order
// (turn/start, step/start, system/message, user/message, request/header,
// request/context, assistant/message, tool/call + tool/result pairs,
// step/end, turn/end), with failed attempts retried now and then, the
// system prompt (node 0) replaced every PromptEvery turns, and a compaction
// bracket every CompactEvery turns whose checkpoint replaces surface nodes
// 1..k, citing compaction/start, compaction/summary and every shadowed node.
package loggen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// Config shapes a generated log.
type Config struct {
	Seed uint64
	// Events is the minimum number of events; generation stops at the first
	// turn boundary at or after it.
	Events int
	// ToolOutput is the mean size in bytes of an ordinary tool output (sizes
	// vary from a tenth to about four times the mean).
	ToolOutput int
	// One tool output in LargeEvery (0: none) is large, LargeOutput bytes
	// on average (a file read, a build log).
	LargeEvery, LargeOutput int
	// Text is the mean size in bytes of an assistant text or reasoning block.
	Text int
	// CompactEvery is the number of turns between compactions (0: never).
	CompactEvery int
	// PromptEvery is the number of turns between system-prompt changes
	// (0: never).
	PromptEvery int
	// Start is the time of the first event, epoch milliseconds.
	Start int64
}

// Realistic is the benchmark log: about 70,000 events and 30 MB of JSONL.
func Realistic() Config {
	return Config{Seed: 1, Events: 70_000, ToolOutput: 120, LargeEvery: 50, LargeOutput: 16_000, Text: 75,
		CompactEvery: 40, PromptEvery: 25, Start: 1_750_000_000_000}
}

// Small is a log of at least n events with small payloads, for tests.
func Small(n int) Config {
	return Config{Seed: 7, Events: n, ToolOutput: 200, LargeEvery: 100, LargeOutput: 4000, Text: 60,
		CompactEvery: 6, PromptEvery: 4, Start: 1_750_000_000_000}
}

// Generate builds the log described by cfg.
func Generate(cfg Config) (*surface.Log, error) {
	g := &gen{cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), now: cfg.Start}
	g.log = surface.New(surface.WithClock(g.tick))
	g.corpus = makeCorpus(g.r)
	for g.log.Len() < cfg.Events {
		if err := g.turn(); err != nil {
			return nil, fmt.Errorf("loggen: turn %d: %w", g.turnNo, err)
		}
	}
	return g.log, nil
}

// Events is Generate's events.
func Events(cfg Config) ([]surface.Event, error) {
	l, err := Generate(cfg)
	if err != nil {
		return nil, err
	}
	return l.Events(), nil
}

type gen struct {
	cfg    Config
	r      *rand.Rand
	log    *surface.Log
	now    int64
	corpus string

	turnNo    int64
	step      int64
	ids       int
	head      int64   // seq of the system node at surface node 0
	firstUser []int64 // seq of each turn's user message, by turn-1
	model     int
	compacts  int
}

var models = []string{"deepseek-chat", "deepseek-reasoner"}

var tools = []string{"read_file", "write_file", "edit_file", "bash", "grep", "glob", "web_fetch", "todo_write"}

func (g *gen) tick() int64 {
	g.now += 1 + g.r.Int64N(2500)
	return g.now
}

func (g *gen) id(prefix string) string {
	g.ids++
	return fmt.Sprintf("%s-%06d", prefix, g.ids)
}

// text returns a slice of the corpus of about n bytes (at least 1).
func (g *gen) text(n int) string {
	if n < 1 {
		n = 1
	}
	if n > len(g.corpus)/2 {
		n = len(g.corpus) / 2
	}
	i := g.r.IntN(len(g.corpus) - n)
	// Cut on rune boundaries.
	for i > 0 && g.corpus[i]&0xC0 == 0x80 {
		i--
	}
	j := i + n
	for j < len(g.corpus) && g.corpus[j]&0xC0 == 0x80 {
		j++
	}
	return g.corpus[i:j]
}

// size draws a size around mean (a tenth to about four times the mean).
func (g *gen) size(mean int) int {
	f := g.r.ExpFloat64()
	if f > 4 {
		f = 4
	}
	return mean/10 + int(f*float64(mean)*0.9)
}

func (g *gen) outputSize() int {
	if g.cfg.LargeEvery > 0 && g.r.IntN(g.cfg.LargeEvery) == 0 {
		return g.cfg.LargeOutput/2 + g.r.IntN(g.cfg.LargeOutput)
	}
	return g.size(g.cfg.ToolOutput)
}

func (g *gen) add(typ string, data any, op surface.Op, sources []int64) (surface.Event, error) {
	b, err := json.Marshal(data, json.Deterministic(true))
	if err != nil {
		return surface.Event{}, err
	}
	return g.log.Append(surface.Proposal{Type: typ, Data: b, Op: op, Sources: sources})
}

type turnStep struct {
	Turn int64 `json:"turn"`
	Step int64 `json:"step,omitzero"`
}

type turnEnd struct {
	Turn   int64          `json:"turn"`
	Reason map[string]any `json:"reason"`
}

// message, source and block are the wire form of surface messages.
type message struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Source  source  `json:"source"`
	Content []block `json:"content"`
}

type source struct {
	Kind         string `json:"kind"`
	Plugin       string `json:"plugin,omitempty"`
	CompactionID string `json:"compactionId,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	CallID       string `json:"callId,omitempty"`
}

type block struct {
	Type       string  `json:"type"`
	Text       *string `json:"text,omitempty"`
	ID         string  `json:"id,omitempty"`
	Name       string  `json:"name,omitempty"`
	Arguments  *string `json:"arguments,omitempty"`
	ToolCallID string  `json:"toolCallId,omitempty"`
	IsError    *bool   `json:"isError,omitempty"`
	Content    []block `json:"content,omitempty"`
}

func textBlock(typ, s string) block { return block{Type: typ, Text: &s} }

type stepMessage struct {
	Turn    int64          `json:"turn"`
	Step    int64          `json:"step"`
	Message message        `json:"message"`
	Stream  jsontext.Value `json:"stream,omitempty"`
	Usage   map[string]any `json:"usage,omitempty"`
	Error   map[string]any `json:"error,omitempty"`
	Meta    map[string]any `json:"meta,omitempty"`
}

type toolCall struct {
	Turn      int64  `json:"turn"`
	Step      int64  `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (g *gen) turn() error {
	g.turnNo++
	g.step = 0
	t := g.turnNo
	if _, err := g.add(surface.TypeTurnStart, turnStep{Turn: t}, surface.Op{}, nil); err != nil {
		return err
	}
	series := false
	if g.cfg.CompactEvery > 0 && t > 1 && t%int64(g.cfg.CompactEvery) == 0 {
		ok, err := g.compact()
		if err != nil {
			return fmt.Errorf("compaction: %w", err)
		}
		series = series || ok
	}
	if err := g.stepStart(); err != nil {
		return err
	}
	switch {
	case t == 1:
		ev, err := g.add(surface.TypeSystemMessage, stepMessage{Turn: t, Step: 1,
			Message: systemMessage(g.id("sys"), g.prompt())}, surface.Append, nil)
		if err != nil {
			return err
		}
		g.head = ev.Seq
	case g.cfg.PromptEvery > 0 && t%int64(g.cfg.PromptEvery) == 0:
		ev, err := g.add(surface.TypeSystemMessage, stepMessage{Turn: t, Step: 1,
			Message: systemMessage(g.id("sys"), g.prompt())},
			surface.Replace(g.head, g.head), []int64{g.head})
		if err != nil {
			return fmt.Errorf("prompt change: %w", err)
		}
		g.head = ev.Seq
		series = true
	}
	user, err := g.add(surface.TypeUserMessage, message{ID: g.id("usr"), Role: surface.RoleUser,
		Source: source{Kind: "user"}, Content: []block{textBlock(surface.BlockText, g.text(g.size(g.cfg.Text)))}},
		surface.Append, nil)
	if err != nil {
		return err
	}
	g.firstUser = append(g.firstUser, user.Seq)

	changed := t > 1 && t%17 == 0
	if changed {
		g.model = (g.model + 1) % len(models)
	}
	switch {
	case t == 1:
		err = g.header("initial", false)
	case changed:
		err = g.header("change", series)
	case series:
		err = g.header("series", true)
	}
	if err != nil {
		return err
	}
	if t == 1 || changed {
		if _, err := g.add(surface.TypeRequestContext, map[string]any{"provider": "deepseek",
			"model": models[g.model], "contextWindow": 128000}, surface.Op{}, nil); err != nil {
			return err
		}
	}
	steps := 1 + g.r.IntN(4)
	for s := 1; s <= steps; s++ {
		if s > 1 {
			if err := g.stepStart(); err != nil {
				return err
			}
		}
		calls := 0
		if s < steps {
			calls = 1 + g.r.IntN(3)
		}
		if err := g.assistant(calls); err != nil {
			return err
		}
		if _, err := g.add(surface.TypeStepEnd, turnStep{Turn: t, Step: g.step}, surface.Op{}, nil); err != nil {
			return err
		}
	}
	_, err = g.add(surface.TypeTurnEnd, turnEnd{Turn: t, Reason: map[string]any{"kind": "completed"}}, surface.Op{}, nil)
	return err
}

func (g *gen) stepStart() error {
	g.step++
	_, err := g.add(surface.TypeStepStart, turnStep{Turn: g.turnNo, Step: g.step}, surface.Op{}, nil)
	return err
}

func systemMessage(id, text string) message {
	return message{ID: id, Role: surface.RoleSystem, Source: source{Kind: "plugin", Plugin: "system-prompt"},
		Content: []block{textBlock(surface.BlockText, text)}}
}

func (g *gen) prompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are Weir, a coding agent. Prompt revision %d.\n\n", g.ids)
	b.WriteString(g.text(6000 + g.r.IntN(4000)))
	return b.String()
}

func (g *gen) header(reason string, starts bool) error {
	var ts []jsontext.Value
	for _, name := range tools {
		schema := fmt.Sprintf(`{"name":%q,"description":%q,"parameters":{"type":"object","properties":{"path":{"type":"string","description":"Absolute path."},"content":{"type":"string"}},"required":["path"]}}`,
			name, strings.ReplaceAll(g.text(160), "\n", " "))
		ts = append(ts, jsontext.Value(schema))
	}
	data := map[string]any{
		"header": map[string]any{
			"config": map[string]any{"provider": "deepseek", "model": models[g.model], "maxTokens": 8192},
			"tools":  ts,
		},
		"reason": reason,
	}
	if starts {
		data["startsSeries"] = true
	}
	_, err := g.add(surface.TypeRequestHeader, data, surface.Op{}, nil)
	return err
}

// stream renders an attempt's provider stream: timed delta records.
func (g *gen) stream(blocks []block, finish string) jsontext.Value {
	type rec struct {
		T    int64  `json:"t"`
		Kind string `json:"k"`
		Text string `json:"d,omitempty"`
		ID   string `json:"id,omitempty"`
		Name string `json:"name,omitempty"`
	}
	var recs []rec
	var at int64
	for _, b := range blocks {
		at += g.r.Int64N(400)
		switch b.Type {
		case surface.BlockText, surface.BlockReasoning:
			for s := *b.Text; s != ""; {
				n := min(len(s), 160)
				for n < len(s) && s[n]&0xC0 == 0x80 {
					n++
				}
				recs = append(recs, rec{T: at, Kind: b.Type + "-delta", Text: s[:n]})
				s = s[n:]
				at += g.r.Int64N(60)
			}
		case surface.BlockToolCall:
			recs = append(recs, rec{T: at, Kind: "tool-call", ID: b.ID, Name: b.Name, Text: *b.Arguments})
		}
	}
	recs = append(recs, rec{T: at + 5, Kind: "finish", Text: finish})
	out, _ := json.Marshal(recs, json.Deterministic(true))
	return out
}

func (g *gen) assistant(calls int) error {
	t, s := g.turnNo, g.step
	model := models[g.model]
	if g.r.IntN(20) == 0 { // a failed attempt, retried
		partial := []block{textBlock(surface.BlockText, g.text(g.size(g.cfg.Text/4)))}
		if _, err := g.add(surface.TypeAssistantAttempt, map[string]any{"turn": t, "step": s,
			"stream": g.stream(partial, "error")}, surface.Op{}, nil); err != nil {
			return err
		}
		if _, err := g.add(surface.TypeLLMRetry, map[string]any{"turn": t, "step": s, "retry": 1,
			"failure": map[string]any{"message": "upstream overloaded", "code": "RATE_LIMIT"}}, surface.Op{}, nil); err != nil {
			return err
		}
	}
	content := []block{textBlock(surface.BlockReasoning, g.text(g.size(g.cfg.Text)))}
	if calls == 0 || g.r.IntN(2) == 0 {
		content = append(content, textBlock(surface.BlockText, g.text(g.size(g.cfg.Text))))
	}
	type call struct{ id, name, args string }
	var cs []call
	for range calls {
		c := call{id: g.id("call"), name: tools[g.r.IntN(len(tools))]}
		args, _ := json.Marshal(struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}{"/work/src/" + g.id("f") + ".go", g.text(g.size(g.cfg.Text / 2))})
		c.args = string(args)
		cs = append(cs, c)
		content = append(content, block{Type: surface.BlockToolCall, ID: c.id, Name: c.name, Arguments: &c.args})
	}
	finish := "stop"
	if calls > 0 {
		finish = "tool-calls"
	}
	in := int64(2000 + g.r.IntN(60000))
	msg := stepMessage{Turn: t, Step: s,
		Message: message{ID: g.id("ast"), Role: surface.RoleAssistant,
			Source: source{Kind: "model", Provider: "deepseek", Model: model}, Content: content},
		Stream: g.stream(content, finish),
		Usage: map[string]any{"inputTokens": in / 10, "cacheReadTokens": in - in/10,
			"outputTokens": 50 + g.r.IntN(2000)},
	}
	if _, err := g.add(surface.TypeAssistantMessage, msg, surface.Append, nil); err != nil {
		return err
	}
	for _, c := range cs {
		if _, err := g.add(surface.TypeToolCall, toolCall{Turn: t, Step: s, CallID: c.id, Name: c.name, Arguments: c.args},
			surface.Op{}, nil); err != nil {
			return err
		}
	}
	for _, c := range cs {
		failed := g.r.IntN(12) == 0
		res := stepMessage{Turn: t, Step: s,
			Message: message{ID: g.id("res"), Role: surface.RoleUser,
				Source: source{Kind: "tool", CallID: c.id},
				Content: []block{{Type: surface.BlockToolResult, ToolCallID: c.id, IsError: &failed,
					Content: []block{textBlock(surface.BlockText, g.text(g.outputSize()))}}}},
			Meta: map[string]any{"durationMs": 5 + g.r.IntN(3000)},
		}
		if failed {
			res.Error = map[string]any{"name": "ToolError", "code": "EXIT_STATUS", "reason": "exit status 1"}
		}
		if _, err := g.add(surface.TypeToolResult, res, surface.Append, nil); err != nil {
			return err
		}
	}
	return nil
}

// compact runs a compaction bracket inside the open turn, before its first
// step: the checkpoint replaces nodes 1..k, keeping the last two turns. It
// reports whether a replacement was committed.
func (g *gen) compact() (bool, error) {
	keep := len(g.firstUser) - 2
	if keep < 1 {
		return false, nil
	}
	nodes := g.log.Nodes()
	end := slices.Index(nodes, g.firstUser[keep]) - 1
	if end < 1 {
		return false, nil
	}
	g.compacts++
	cid := fmt.Sprintf("cmp-%04d", g.compacts)
	start, err := g.add(surface.TypeCompactionStart, map[string]any{"compactionId": cid, "turn": g.turnNo}, surface.Op{}, nil)
	if err != nil {
		return false, err
	}
	shadowed := nodes[1 : end+1]
	summary := g.text(g.size(8 * g.cfg.Text))
	sum, err := g.add(surface.TypeCompactionSummary, map[string]any{
		"compactionId":       cid,
		"summary":            summary,
		"shadowedRange":      map[string]int64{"start": shadowed[0], "end": shadowed[len(shadowed)-1]},
		"shadowedSeqs":       shadowed,
		"shadowedTokenCount": 1000 * len(shadowed),
		"provider":           "deepseek",
		"model":              models[g.model],
	}, surface.Op{}, nil)
	if err != nil {
		return false, err
	}
	sources := append([]int64{start.Seq, sum.Seq}, shadowed...)
	checkpoint := message{ID: g.id("ckp"), Role: surface.RoleUser,
		Source: source{Kind: "plugin", Plugin: "compact", CompactionID: cid},
		Content: []block{
			textBlock(surface.BlockText, "This is an automatically generated checkpoint of the conversation so far.\n\n<compacted-summary>"),
			textBlock(surface.BlockText, summary),
			textBlock(surface.BlockText, "</compacted-summary>"),
		}}
	if _, err := g.add(surface.TypeUserMessage, checkpoint, surface.Replace(shadowed[0], shadowed[len(shadowed)-1]), sources); err != nil {
		return false, err
	}
	_, err = g.add(surface.TypeCompactionEnd, map[string]any{"compactionId": cid, "turn": g.turnNo}, surface.Op{}, nil)
	return true, err
}

// makeCorpus builds a pseudo-text with the features of real tool output and
// prose: short lines, code punctuation, quotes and backslashes that JSON must
// escape, tabs and some non-ASCII runes.
func makeCorpus(r *rand.Rand) string {
	words := []string{"the", "func", "return", "err", "nil", "if", "for", "range", "session", "log",
		"surface", "event", "seq", "struct", "package", "import", "string", "int64", "value", "config",
		"model", "prompt", "append", "replace", "node", "fold", "error", "context", "request", "header",
		`"quoted"`, `a\b`, "x := 1", "{", "}", "(", ")", "[]byte", "->", "==", "// comment",
		"naïve", "café", "→", "λ", "✓", "日本語", "\t", "0x1f", "42", "3.14", "TODO:", "path/to/file.go:17"}
	var b strings.Builder
	for b.Len() < 1<<20 {
		line := 3 + r.IntN(12)
		for i := range line {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
