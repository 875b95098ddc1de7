package compact

import "github.com/weirhost/weir/surface"

// Session is what compaction reads from the session it compacts, plus the
// summarization capability. It is implemented natively over the host's
// provider view and, inside a WebAssembly guest, over the host imports.
// Compaction never writes through it: what it wants changed it returns as
// proposals, which the host admits all or nothing after the call.
type Session interface {
	// Nodes describes the surface nodes in order.
	Nodes() ([]Node, error)
	// Message returns the message of the surface event with the given seq.
	Message(seq int64) (*surface.Message, error)
	// Header returns the latest logged request header, nil when none.
	Header() (*surface.Header, error)
	// NextSeq is the seq the next committed event will get.
	NextSeq() (int64, error)
	// Measure returns the token meter's current measurement.
	Measure() (*Measurement, error)
	// Summarize runs a summarization model call.
	Summarize(req *SummaryRequest) (*SummaryResult, error)
}

// BracketReader is implemented by sessions that can read the log. It
// reports a compaction bracket left open: the latest compaction/start or
// compaction/end marker is a start and no session/end-seed follows it.
// Sessions that cannot read the log need not implement it: the host
// admits a bracket in one batch, so a live session never holds an open one.
type BracketReader interface {
	OpenBracket() (id string, open bool, err error)
}

// Node is one surface node.
type Node struct {
	Seq  int64
	Type string // event type: system/message, user/message, ...
	// ToolCalls counts the tool-call blocks of an assistant/message node.
	ToolCalls int
}

// Measurement is the part of a token measurement compaction reads.
type Measurement struct {
	// TotalTokens is the measured size of the next request.
	TotalTokens int64
	// Nodes are the surface nodes' prices, in surface order.
	Nodes []NodeTokens
}

// NodeTokens is the price of one surface node: Tokens as the route prices
// it, HeuristicTokens by the fixed estimator of spec 12.1.
type NodeTokens struct {
	Seq             int64
	Tokens          int64
	HeuristicTokens int64
}

// SummaryRequest is a summarization call. Messages is the input (node 0's
// system message when it projects to one, then the span's derived
// messages); Instruction is the compaction instruction, sent as one final
// user message after them (see Wire).
type SummaryRequest struct {
	Provider, Model string
	Messages        []*surface.Message
	Instruction     string
	// Tools are the latest header's tool schemas (JSON), nil when none.
	Tools     [][]byte
	MaxTokens int64 // 0: no cap
}

// Wire returns the messages of the model call: Messages followed by the
// instruction as a user message.
func (r *SummaryRequest) Wire() []*surface.Message {
	out := make([]*surface.Message, 0, len(r.Messages)+1)
	out = append(out, r.Messages...)
	return append(out, &surface.Message{ID: "compact-instruction", Role: surface.RoleUser,
		Source: surface.Source{Kind: "plugin", Plugin: PluginID}, Content: []surface.Block{surface.Text(r.Instruction)}})
}

// SummaryResult is the output of a summarization call.
type SummaryResult struct {
	Content      []surface.Block
	Usage        *surface.Usage
	FinishReason string
	// Provider and Model are the route that answered (the request's when empty).
	Provider, Model string
	// LLMStreamCall reports that exactly one call went through the host's
	// LLM service; the summary then records its raw output.
	LLMStreamCall bool
}
