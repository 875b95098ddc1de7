package provider

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// reader is the read access the host imports need. *host.View has it;
// logReader adapts a session's log.
type reader interface {
	Nodes() []surface.NodeInfo
	Event(seq int64) (surface.Event, bool)
	MessageData(seq int64) ([]byte, bool)
	Header() *surface.Header
	Generations() (replace, content uint64)
	NextSeq() int64
}

var _ reader = (*host.View)(nil)

// logReader reads a session log. Like the log itself, it must not be used
// while another goroutine proposes to the session.
type logReader struct{ l *surface.Log }

func (r logReader) Nodes() []surface.NodeInfo             { return r.l.Surface() }
func (r logReader) Event(seq int64) (surface.Event, bool) { return r.l.Event(seq) }
func (r logReader) MessageData(seq int64) ([]byte, bool)  { return r.l.MessageData(seq) }
func (r logReader) Header() *surface.Header               { return r.l.Header() }
func (r logReader) NextSeq() int64                        { return r.l.NextSeq() }
func (r logReader) Generations() (uint64, uint64) {
	return r.l.ReplaceGeneration(), r.l.ContentGeneration()
}

// cache is what the host imports keep about one session between calls:
// facts of committed events, which never change, and the token counts of
// the latest measurement.
type cache struct {
	facts      map[int64]nodeFacts
	header     *surface.Header
	headerJSON []byte
	tokens     map[int64]int64
}

type nodeFacts struct {
	size int64
	hash []byte // SHA-256 of the message JSON
}

func newCache() *cache { return &cache{facts: map[int64]nodeFacts{}} }

// nodeFacts returns the size and hash of the message of surface event seq.
func (c *cache) nodeFacts(r reader, seq int64) (nodeFacts, error) {
	if f, ok := c.facts[seq]; ok {
		return f, nil
	}
	msg, ok := r.MessageData(seq)
	if !ok {
		return nodeFacts{}, fmt.Errorf("surface node %d holds no message in the log", seq)
	}
	sum := sha256.Sum256(msg)
	f := nodeFacts{size: int64(len(msg)), hash: sum[:]}
	c.facts[seq] = f
	return f, nil
}

// prune drops the facts of events no longer on the surface once they
// outnumber the surface, so the cache stays O(surface).
func (c *cache) prune(nodes []surface.NodeInfo) {
	if len(c.facts) <= 2*len(nodes)+64 {
		return
	}
	keep := make(map[int64]nodeFacts, len(nodes))
	for _, n := range nodes {
		if f, ok := c.facts[n.Seq]; ok {
			keep[n.Seq] = f
		}
	}
	c.facts = keep
}

// measured records the per-node counts of a measurement.
func (c *cache) measured(m *host.Measurement) {
	if m == nil {
		return
	}
	c.tokens = make(map[int64]int64, len(m.Nodes))
	for _, n := range m.Nodes {
		c.tokens[n.Seq] = n.Tokens
	}
}

// headerBytes returns the JSON of the current header, encoding it once per
// header.
func (c *cache) headerBytes(h *surface.Header) ([]byte, error) {
	if h == c.header && c.headerJSON != nil {
		return c.headerJSON, nil
	}
	b, err := surface.Data(h)
	if err != nil {
		return nil, fmt.Errorf("encode the request header: %w", err)
	}
	c.header, c.headerJSON = h, b
	return b, nil
}

// Host answers a plugin's host imports from a session (plugin.Host). Make
// one per call: it remembers the call's surface for message lookups.
// Grants are per kind (abi.Granted); the runtime enforces them, and Host
// refuses measure and summarize outside compaction calls as well.
type Host struct {
	kind     abi.Kind
	plugin   string
	r        reader     // nil: no session queries
	view     *host.View // compaction calls: measure and summarize
	route    host.Route // summarize default
	counters map[string]tokenizer.Counter
	c        *cache
	// onSurface holds the call's surface seqs once a query listed them.
	onSurface map[int64]bool
}

var _ plugin.Host = (*Host)(nil)

// NewHost returns the host imports of one call of kind over view, for the
// plugin named name. route is the default route of summarize; opts set the
// tokenizers. Without a view (prompt calls) only count_tokens answers.
func NewHost(view *host.View, kind abi.Kind, name string, route host.Route, opts ...Option) *Host {
	o := newOptions(opts)
	h := &Host{kind: kind, plugin: name, route: route, counters: o.counters, c: newCache()}
	if view != nil {
		h.r, h.view = view, view
	}
	return h
}

func (h *Host) session() error {
	if h.r == nil {
		return fmt.Errorf("no session to read: %w", plugin.ErrNotGranted)
	}
	return nil
}

// SurfaceNodes implements plugin.Host.
func (h *Host) SurfaceNodes(context.Context) ([]abi.Node, error) {
	if err := h.session(); err != nil {
		return nil, err
	}
	infos := h.r.Nodes()
	out := make([]abi.Node, len(infos))
	h.onSurface = make(map[int64]bool, len(infos))
	for i, n := range infos {
		f, err := h.c.nodeFacts(h.r, n.Seq)
		if err != nil {
			return nil, err
		}
		out[i] = abi.Node{Seq: n.Seq, Type: n.Type, Role: n.Role, Size: f.size, ContentHash: f.hash}
		if t, ok := h.c.tokens[n.Seq]; ok {
			out[i].Tokens, out[i].HasTokens = t, true
		}
		h.onSurface[n.Seq] = true
	}
	h.c.prune(infos)
	return out, nil
}

// Message implements plugin.Host.
func (h *Host) Message(_ context.Context, seq int64) ([]byte, error) {
	if err := h.session(); err != nil {
		return nil, err
	}
	if h.onSurface == nil {
		nodes := h.r.Nodes()
		h.onSurface = make(map[int64]bool, len(nodes))
		for _, n := range nodes {
			h.onSurface[n.Seq] = true
		}
	}
	if !h.onSurface[seq] {
		return nil, fmt.Errorf("no surface node holds seq %d: %w", seq, plugin.ErrNotFound)
	}
	// The log's own bytes, read only: the import copies them into the
	// guest's memory.
	m, ok := h.r.MessageData(seq)
	if !ok {
		return nil, fmt.Errorf("seq %d holds no message in the log: %w", seq, plugin.ErrNotFound)
	}
	return m, nil
}

var _ plugin.EventHost = (*Host)(nil)

// Event implements plugin.EventHost: the type and stored data JSON of the
// committed event at seq, on the surface or not.
func (h *Host) Event(_ context.Context, seq int64) (*abi.EventData, error) {
	if err := h.session(); err != nil {
		return nil, err
	}
	e, ok := h.r.Event(seq)
	if !ok {
		return nil, fmt.Errorf("seq %d is not in the log (its length is %d): %w", seq, h.r.NextSeq(), plugin.ErrNotFound)
	}
	return &abi.EventData{Seq: e.Seq, Type: e.Type, Data: e.Data}, nil
}

// Generations implements plugin.Host.
func (h *Host) Generations(context.Context) (abi.Generations, error) {
	if err := h.session(); err != nil {
		return abi.Generations{}, err
	}
	rg, cg := h.r.Generations()
	return abi.Generations{Replace: int64(rg), Content: int64(cg), LogLength: h.r.NextSeq()}, nil
}

// Header implements plugin.Host.
func (h *Host) Header(context.Context) ([]byte, error) {
	if err := h.session(); err != nil {
		return nil, err
	}
	hd := h.r.Header()
	if hd == nil {
		return nil, fmt.Errorf("the session has logged no request header yet: %w", plugin.ErrNotFound)
	}
	return h.c.headerBytes(hd)
}

// Measure implements plugin.Host: the session meter's measurement
// (compaction calls only).
func (h *Host) Measure(ctx context.Context) (*abi.Measurement, error) {
	if h.kind != abi.KindCompaction || h.view == nil {
		return nil, fmt.Errorf("measure serves compaction calls only: %w", plugin.ErrNotGranted)
	}
	m, err := h.view.Measure(ctx, nil)
	if errors.Is(err, host.ErrNotGranted) {
		return nil, fmt.Errorf("%v: %w", err, plugin.ErrNotGranted)
	}
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("the meter has no measurement: %w", plugin.ErrNotFound)
	}
	h.c.measured(m)
	return toABIMeasurement(m)
}

// Summarize implements plugin.Host: a model call through the session's
// summarizer (compaction calls only) on the compaction's route
// (summaryCall). A non-empty instruction is sent as a final user message
// after the request's messages.
func (h *Host) Summarize(ctx context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
	if h.kind != abi.KindCompaction || h.view == nil {
		return nil, fmt.Errorf("summarize serves compaction calls only: %w", plugin.ErrNotGranted)
	}
	sr := summaryCall(req, h.route, h.view.MaxSummarizeTokens())
	for i, raw := range req.Messages {
		var m surface.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("summarize: message %d is not a message: %w", i, err)
		}
		sr.Messages = append(sr.Messages, &m)
	}
	if req.Instruction != "" {
		sr.Messages = append(sr.Messages, &surface.Message{ID: "summarize-instruction", Role: surface.RoleUser,
			Source:  surface.Source{Kind: "plugin", Plugin: h.plugin},
			Content: []surface.Block{surface.Text(req.Instruction)}})
	}
	if len(req.Tools) > 0 {
		if err := json.Unmarshal(req.Tools, &sr.Tools); err != nil {
			return nil, fmt.Errorf("summarize: tools are not a JSON array: %w", err)
		}
	}
	res, err := h.view.Summarize(ctx, sr)
	if errors.Is(err, host.ErrNotGranted) {
		return nil, fmt.Errorf("%v: %w", err, plugin.ErrNotGranted)
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("the summarizer returned no result")
	}
	out := &abi.SummarizeResult{FinishReason: res.FinishReason,
		Route: abi.Route{Provider: res.Provider, Model: res.Model}}
	if out.Route == (abi.Route{}) {
		out.Route = abi.Route{Provider: sr.Provider, Model: sr.Model}
	}
	for _, b := range res.Content {
		if b.Type == surface.BlockText {
			out.Text = append(out.Text, b.Text)
		}
	}
	content := res.Content
	if content == nil {
		content = []surface.Block{}
	}
	if out.RawOutput, err = surface.Data(content); err != nil {
		return nil, fmt.Errorf("summarize: encode the output: %w", err)
	}
	if res.Usage != nil {
		if out.Usage, err = surface.Data(res.Usage); err != nil {
			return nil, fmt.Errorf("summarize: encode the usage: %w", err)
		}
	}
	return out, nil
}

// summaryCall is the call config the host sends for a plugin's summarize
// request: the provider and model of route whatever the plugin named, and
// the plugin's max tokens clamped to the route's cap (route.MaxTokens), or,
// on a route without one, to the compaction's token budget (budget; 0:
// none), and always to the model's output cap (route.MaxOutput). A request
// naming no size gets the route's cap. What the plugin
// asked for is kept in Asked where it differs, for the plugin/call record.
func summaryCall(req *abi.SummarizeRequest, route host.Route, budget int64) host.SummaryRequest {
	sr := host.SummaryRequest{Provider: route.Provider, Model: route.Model, MaxTokens: route.MaxTokens}
	limit := route.MaxTokens
	if limit <= 0 {
		limit = budget
	}
	if req.MaxTokens > 0 {
		sr.MaxTokens = req.MaxTokens
		if limit > 0 {
			sr.MaxTokens = min(req.MaxTokens, limit)
		}
	}
	if sr.MaxTokens > 0 {
		// Never above what the route's model accepts (route.MaxOutput).
		sr.MaxTokens, _ = route.ClampOutput(sr.MaxTokens)
	}
	var asked host.CallAsked
	if p := req.Route.Provider; p != "" && p != route.Provider {
		asked.Provider = p
	}
	if m := req.Route.Model; m != "" && m != route.Model {
		asked.Model = m
	}
	if req.MaxTokens > 0 && req.MaxTokens != sr.MaxTokens {
		asked.MaxTokens = req.MaxTokens
	}
	if asked != (host.CallAsked{}) {
		sr.Asked = &asked
	}
	return sr
}

// CountTokens implements plugin.Host with the host's native tokenizers.
func (h *Host) CountTokens(_ context.Context, name string, text []byte) (int, error) {
	c, ok := h.counters[name]
	if !ok {
		return 0, fmt.Errorf("no tokenizer named %s (the host has %s): %w", strconv.Quote(name),
			knownTokenizers(h.counters), plugin.ErrNotFound)
	}
	return c.Count(string(text)), nil
}
