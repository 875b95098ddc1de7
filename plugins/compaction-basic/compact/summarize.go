package compact

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/sdk/jsonobj"

	"github.com/weirhost/weir/surface"
)

// PluginID is the plugin id of checkpoint messages when the caller names
// none (Request.Plugin). The host requires a checkpoint's source to name
// the provider as configured, so both the native provider and the plugin
// pass their configured name.
const PluginID = "compact"

// Tags framing the summary inside a checkpoint.
const (
	OpenTag  = "<compacted-summary>"
	CloseTag = "</compacted-summary>"
)

// Preamble opens every checkpoint message, before a blank line and the
// open tag.
const Preamble = "This message was generated automatically: it is a checkpoint that " +
	"stands in for the earlier part of this conversation, which was condensed to " +
	"free up context. Treat everything inside it as established background, and " +
	"carry on with the work from where it stands without acknowledging or " +
	"mentioning the checkpoint."

// Sections are the headings of a checkpoint, in order.
var Sections = []string{
	"Primary Request and Intent",
	"Key Technical Concepts",
	"Files and Code",
	"Errors and Fixes",
	"Pending Jobs",
	"Current Work",
	"Next Step",
	"Critical Context",
}

// Instruction is the final user message of every summarization call.
var Instruction = buildInstruction()

func buildInstruction() string {
	var b strings.Builder
	b.WriteString("You are now the context compaction engine for the conversation above. ")
	b.WriteString("Stop working on the task itself and write one Markdown checkpoint that lets the work ")
	b.WriteString("continue without the earlier messages. Use exactly these sections, in this order, ")
	b.WriteString("each as a level-2 heading:\n\n")
	for i, s := range Sections {
		b.WriteString(strconv.Itoa(i+1) + ". ## " + s + "\n")
	}
	b.WriteString("\nRules:\n")
	for _, r := range []string{
		"Keep every section, in order; write \"(none)\" under a section that has nothing to say.",
		"Write terse bullet points, not prose.",
		"Preserve exactly, character for character: file paths, commands, error messages, identifiers, numbers, versions and function signatures.",
		"Keep every correction, preference and constraint the user stated, in the user's terms.",
		"Write the checkpoint as the state of the work; do not mention that it is a summary or that anything was condensed.",
		"Do not call any tools; answer with the checkpoint text only.",
		"If the conversation already contains a " + OpenTag + " block, merge its content into the new checkpoint instead of copying it verbatim.",
	} {
		b.WriteString("- ")
		b.WriteString(r)
		b.WriteByte('\n')
	}
	return b.String()
}

// summary is a validated summarization output.
type summary struct {
	blocks []surface.Block // the text blocks
	text   string          // their concatenated text
	raw    []surface.Block // every block, when some were not text (or the call asks for it)
}

// finish reasons that mean the output is incomplete or failed.
func badFinish(reason string) (code string, bad bool) {
	switch reason {
	case "max-tokens", "length", "max_tokens":
		return "MAX_TOKENS", true
	case "error", "aborted", "cancelled", "content-filter", "content_filter":
		return strings.ToUpper(strings.ReplaceAll(reason, "-", "_")), true
	}
	return "", false
}

// checkSummary applies the result rules of spec 11.7.
func checkSummary(r *SummaryResult, maxTokens int64) (*summary, error) {
	if r == nil {
		return nil, errors.New("the summarizer returned no result")
	}
	if code, bad := badFinish(r.FinishReason); bad {
		if code == "MAX_TOKENS" {
			return nil, errors.New("MAX_TOKENS: the summarizer reached its output cap (" + strconv.FormatInt(maxTokens, 10) + " tokens) and the checkpoint would be incomplete")
		}
		return nil, errors.New(code + ": the summarizer finished with " + strconv.Quote(r.FinishReason))
	}
	s := &summary{}
	raw := r.LLMStreamCall
	for _, b := range r.Content {
		switch b.Type {
		case surface.BlockText:
			s.blocks = append(s.blocks, surface.Text(b.Text))
			s.text += b.Text
		case surface.BlockReasoning, surface.BlockToolCall:
			raw = true
		default:
			return nil, errors.New("the summarizer produced unsupported content (a " + strconv.Quote(b.Type) + " block); a checkpoint holds text only")
		}
	}
	if strings.TrimSpace(s.text) == "" {
		return nil, errors.New("the summarizer produced no text")
	}
	if raw {
		s.raw = r.Content
	}
	return s, nil
}

// checkpointContent frames summary blocks as a checkpoint message content.
func checkpointContent(blocks []surface.Block) []surface.Block {
	out := make([]surface.Block, 0, len(blocks)+2)
	out = append(out, surface.Text(Preamble+"\n\n"+OpenTag))
	out = append(out, blocks...)
	return append(out, surface.Text(CloseTag))
}

// IsCheckpoint reports whether m is a compaction checkpoint: a plugin's
// message whose source names the compaction it stands for.
func IsCheckpoint(m *surface.Message) bool {
	if m == nil || m.Source.Kind != "plugin" || m.Source.Plugin == "" {
		return false
	}
	var id string
	err := jsonobj.Members(m.Source.Unknown, func(name string, v jsontext.Value) (err error) {
		if name == "compactionId" {
			id, err = jsonobj.String(v)
		}
		return err
	})
	return err == nil && id != ""
}
