package compact

import (
	"fmt"
	"unicode/utf8"

	"github.com/weirhost/weir/surface"
)

// utf16Len is the length of s in UTF-16 code units (one per code point
// below U+10000, two above; one per invalid byte), the unit the fixed
// estimator counts.
func utf16Len(s string) int64 {
	var n int64
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		n++
		if r > 0xFFFF {
			n++
		}
		i += w
	}
	return n
}

func quarter(n int64) int64 { return (n + 3) / 4 }

// EstimateBlock prices one content block with the fixed estimator of spec
// 12.1: text and reasoning ceil(len/4)+4; tool-call
// ceil(len(name)/4)+ceil(len(arguments)/4)+4; tool-result the inner
// content plus 4; any other block 4+ceil(len(JSON)/4).
func EstimateBlock(b *surface.Block) int64 {
	switch b.Type {
	case surface.BlockText, surface.BlockReasoning:
		return quarter(utf16Len(b.Text)) + 4
	case surface.BlockToolCall:
		return quarter(utf16Len(b.Name)) + quarter(utf16Len(b.Arguments)) + 4
	case surface.BlockToolResult:
		var n int64
		for i := range b.Content {
			n += EstimateBlock(&b.Content[i])
		}
		return n + 4
	}
	raw := []byte(b.Unknown)
	if len(raw) == 0 {
		raw, _ = encodeBlock(b)
	}
	return 4 + quarter(utf16Len(string(raw)))
}

// EstimateContent prices a message content: its blocks plus the role
// overhead of 4.
func EstimateContent(content []surface.Block) int64 {
	n := int64(4)
	for i := range content {
		n += EstimateBlock(&content[i])
	}
	return n
}

// EstimateNode prices a surface node: 0 when it projects to no message.
func EstimateNode(typ string, m *surface.Message) int64 {
	if pm, ok := surface.Project(typ, m); ok {
		return EstimateContent(pm.Content)
	}
	return 0
}

// EstimateTools prices tool schemas: ceil(len(JSON array)/4)+4, 0 when
// there are none.
func EstimateTools(tools [][]byte) int64 {
	if len(tools) == 0 {
		return 0
	}
	n := int64(1 + len(tools)) // brackets and commas
	for _, t := range tools {
		n += utf16Len(string(t))
	}
	return quarter(n) + 4
}

// Estimate is the heuristic measurement of a session: every node priced
// with the fixed estimator, total = tools + surface. It stands in for a
// token meter when the session has none.
func Estimate(s Session) (*Measurement, error) {
	nodes, err := s.Nodes()
	if err != nil {
		return nil, err
	}
	h, err := s.Header()
	if err != nil {
		return nil, err
	}
	m := &Measurement{Nodes: make([]NodeTokens, len(nodes))}
	if h != nil {
		m.TotalTokens = EstimateTools(toolBytes(h))
	}
	for i, n := range nodes {
		msg, err := s.Message(n.Seq)
		if err != nil {
			return nil, fmt.Errorf("price node %d (seq %d): %w", i, n.Seq, err)
		}
		p := EstimateNode(n.Type, msg)
		m.Nodes[i] = NodeTokens{Seq: n.Seq, Tokens: p, HeuristicTokens: p}
		m.TotalTokens += p
	}
	return m, nil
}

func toolBytes(h *surface.Header) [][]byte {
	if h == nil || len(h.Tools) == 0 {
		return nil
	}
	out := make([][]byte, len(h.Tools))
	for i, t := range h.Tools {
		out[i] = t
	}
	return out
}
