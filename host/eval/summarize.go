package eval

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// ExtractiveLabel opens every extractive summary, so a checkpoint made
// from one is never mistaken for a model's.
const ExtractiveLabel = "[offline extractive summary for evaluation: the region's user requests and tool names, not written by a model]"

// summarizer answers a replay's summarize calls: from the recording when
// it holds a summary of the same request, else from the configured model
// within its cap, else extractively.
type summarizer struct {
	rec    *Recording
	opts   SummaryOptions
	counts *SummaryCounts
}

func (s *summarizer) Summarize(ctx context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	cfg := surface.CallConfig{Provider: req.Provider, Model: req.Model}
	if req.MaxTokens > 0 {
		mt := req.MaxTokens
		cfg.MaxTokens = &mt
	}
	lreq := &llm.Request{Config: cfg, Messages: req.Messages, Tools: req.Tools}
	if key, err := requestKey(lreq); err == nil {
		if sum, ok := s.rec.Summaries[key]; ok {
			s.counts.Reused++
			return &host.SummaryResult{Content: []surface.Block{surface.Text(sum.Text)}, Usage: sum.Usage,
				FinishReason: string(llm.FinishStop), Provider: req.Provider, Model: req.Model}, nil
		}
	}
	if s.opts.Model != nil {
		if s.counts.Model < s.opts.MaxCalls {
			s.counts.Model++
			r, err := s.opts.Model.Stream(ctx, lreq, nil)
			if err != nil {
				return nil, err
			}
			return &host.SummaryResult{Content: r.Content, Usage: r.Usage, FinishReason: string(r.FinishReason), Provider: req.Provider, Model: req.Model}, nil
		}
		s.counts.Capped++
	}
	s.counts.Offline++
	text := Extractive(req.Messages, s.opts.MaxChars)
	return &host.SummaryResult{Content: []surface.Block{surface.Text(text)},
		Usage:        &surface.Usage{Output: int64(tokenizer.Heuristic.Count(text))},
		FinishReason: string(llm.FinishStop), Provider: req.Provider, Model: req.Model}, nil
}

// Extractive is the offline summary of a summarization request's
// messages: the user requests of the region (each cut to a line of at
// most 160 characters) and the names of the tools called, with counts,
// under ExtractiveLabel, within maxChars. The system message and the last
// message (the summarization instruction) are not part of the region.
func Extractive(msgs []*surface.Message, maxChars int) string {
	region := msgs
	if n := len(region); n > 0 {
		region = region[:n-1]
	}
	var requests []string
	tools := map[string]int{}
	for _, m := range region {
		switch m.Role {
		case surface.RoleUser:
			if m.Source.Kind != "user" {
				continue
			}
			if t := strings.Join(strings.Fields(surface.TextOf(m.Content)), " "); t != "" {
				requests = append(requests, clipText(t, 160))
			}
		case surface.RoleAssistant:
			for _, b := range m.Content {
				if b.Type == surface.BlockToolCall {
					tools[b.Name]++
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString(ExtractiveLabel)
	b.WriteString("\n## User requests\n")
	if len(requests) == 0 {
		b.WriteString("- (none)\n")
	}
	for i, r := range requests {
		line := "- " + r + "\n"
		if b.Len()+len(line) > maxChars-80 {
			fmt.Fprintf(&b, "- … %d more\n", len(requests)-i)
			break
		}
		b.WriteString(line)
	}
	b.WriteString("## Tools called\n")
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		b.WriteString("- (none)\n")
	}
	for _, n := range names {
		line := fmt.Sprintf("- %s ×%d\n", n, tools[n])
		if b.Len()+len(line) > maxChars {
			break
		}
		b.WriteString(line)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
