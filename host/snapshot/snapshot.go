// Package snapshot pins what the model sees: every wire request of a
// session, normalised for review and diffing.
//
// A snapshot is a folder:
//
//	snapshot.json       the header: format, request count, the prompt
//	                    versions and the header pins (config and tools),
//	                    each with the requests it applies to
//	prompts.md          one section per prompt version, in order of first
//	                    use (harvested from the system/message sequence)
//	requests/NNNN-KIND.json
//	                    one wire body per request, indented, in dispatch
//	                    order; KIND is "loop" (a step's model call) or
//	                    "summarize" (a plugin's summarization call)
//
// Normalisation keeps the bytes the model reads and drops what varies
// between equivalent runs: the system prompt's text becomes the
// placeholder {{system}} (its version is declared in snapshot.json, its
// text in prompts.md), the tools become {{tools}} (pinned with the config
// in snapshot.json), tool-call ids become call-1, call-2, ... in order of
// first appearance, and nothing of an event's time, seq or message id
// reaches the wire. A prompt change is therefore one new prompts.md
// section and a changed range in snapshot.json, not a diff of every
// request; a changed tool schema is a diff of the header pins.
package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// Format names the snapshot layout; a change of layout changes it.
const Format = "weir-snapshot/1"

// Placeholders standing for pinned text in request files.
const (
	SystemPlaceholder = "{{system}}"
	ToolsPlaceholder  = "{{tools}}"
)

// Request kinds.
const (
	KindLoop      = "loop"
	KindSummarize = "summarize"
)

// Snapshot is a session's normalised requests.
type Snapshot struct {
	// Prompts are the distinct system prompt texts, in order of first use;
	// version v is Prompts[v-1].
	Prompts []string
	// Pins are the distinct (config, tools) pairs, in order of first use.
	Pins     []Pin
	Requests []Request
}

// Pin is a request's config and tools.
type Pin struct {
	Config surface.CallConfig
	Tools  []jsontext.Value
}

// Request is one normalised wire request.
type Request struct {
	N    int    // 1-based, in dispatch order
	Kind string // KindLoop or KindSummarize
	Seq  int64  // the settlement (loop) or plugin/call (summarize) seq; not written
	// Prompt is the version of the request's head system message (0: none);
	// InHistory are the versions of its later system messages (an
	// in-history prompt update), written {{system:N}}.
	Prompt    int
	InHistory []int
	// Pin is the version of the request's config and tools (1-based).
	Pin  int
	Body []byte // the indented, normalised wire body
}

// Build makes the snapshot of a session's events. The events must start
// at seq 0 (a complete log).
func Build(events []surface.Event) (*Snapshot, error) {
	if len(events) > 0 && events[0].Seq != 0 {
		return nil, fmt.Errorf("snapshot: the log starts at seq %d; a snapshot needs the complete log from seq 0", events[0].Seq)
	}
	s := &Snapshot{}
	ids := map[string]string{}
	l := surface.New()
	for i := range events {
		ev := events[i]
		var (
			req  *llm.Request
			kind string
			err  error
		)
		switch ev.Type {
		case surface.TypeAssistantMessage, surface.TypeAssistantAttempt:
			kind = KindLoop
			req, err = host.BuildRequest(l, "")
		case host.TypePluginCall:
			var pc host.PluginCall
			if json.Unmarshal(ev.Data, &pc) == nil && pc.Outcome != "refused" {
				kind = KindSummarize
				req, err = host.CallRequest(events, ev.Seq, "")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot: the request settled at seq %d does not rebuild: %w", ev.Seq, err)
		}
		if req != nil {
			r, err := s.add(req, kind, ev.Seq, ids)
			if err != nil {
				return nil, fmt.Errorf("snapshot: request at seq %d: %w", ev.Seq, err)
			}
			s.Requests = append(s.Requests, r)
		}
		if err := l.Admit(ev); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	return s, nil
}

// add normalises one request.
func (s *Snapshot) add(req *llm.Request, kind string, seq int64, ids map[string]string) (Request, error) {
	r := Request{N: len(s.Requests) + 1, Kind: kind, Seq: seq}
	pin := Pin{Config: req.Config, Tools: req.Tools}
	r.Pin = slices.IndexFunc(s.Pins, func(p Pin) bool { return pinEqual(p, pin) }) + 1
	if r.Pin == 0 {
		s.Pins = append(s.Pins, pin)
		r.Pin = len(s.Pins)
	}
	norm := &llm.Request{Config: req.Config, SessionID: ""}
	head := true
	for _, m := range req.Messages {
		c := *m
		c.ID = ""
		c.Content = normBlocks(m.Content, ids)
		if m.Role == surface.RoleSystem {
			text := systemText(m)
			v := slices.Index(s.Prompts, text) + 1
			if v == 0 {
				s.Prompts = append(s.Prompts, text)
				v = len(s.Prompts)
			}
			ph := SystemPlaceholder
			if head {
				r.Prompt = v
			} else {
				ph = fmt.Sprintf("{{system:%d}}", v)
				if text != "" && !slices.Contains(r.InHistory, v) {
					r.InHistory = append(r.InHistory, v)
				}
			}
			if text != "" {
				c.Content = []surface.Block{surface.Text(ph)}
			}
		}
		head = false
		norm.Messages = append(norm.Messages, &c)
	}
	norm.Tools = req.Tools
	body, err := llm.EncodeRequest(norm)
	if err != nil {
		return r, err
	}
	if len(req.Tools) > 0 {
		// One placeholder stands for the whole tools array.
		body, err = replaceTools(body)
		if err != nil {
			return r, err
		}
	}
	v := jsontext.Value(body)
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return r, err
	}
	r.Body = append([]byte(v), '\n')
	return r, nil
}

func replaceTools(body []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, fmt.Errorf("the wire body is not a JSON object: %v", err)
	}
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return nil, err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.Clone()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if err := enc.WriteToken(name); err != nil {
			return nil, err
		}
		if name.String() == "tools" {
			err = enc.WriteToken(jsontext.String(ToolsPlaceholder))
		} else {
			err = enc.WriteValue(val)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

func systemText(m *surface.Message) string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == surface.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// normBlocks copies blocks with tool-call ids renamed call-N in order of
// first appearance.
func normBlocks(bs []surface.Block, ids map[string]string) []surface.Block {
	if bs == nil {
		return nil
	}
	out := make([]surface.Block, len(bs))
	for i, b := range bs {
		if b.ID != "" && b.Type == surface.BlockToolCall {
			b.ID = normID(b.ID, ids)
		}
		if b.ToolCallID != "" {
			b.ToolCallID = normID(b.ToolCallID, ids)
		}
		b.Content = normBlocks(b.Content, ids)
		out[i] = b
	}
	return out
}

func normID(id string, ids map[string]string) string {
	if n, ok := ids[id]; ok {
		return n
	}
	n := "call-" + strconv.Itoa(len(ids)+1)
	ids[id] = n
	return n
}

func pinEqual(a, b Pin) bool {
	return surface.Header{Config: a.Config, Tools: a.Tools}.Canonical().Equal(surface.Header{Config: b.Config, Tools: b.Tools}.Canonical())
}

// header is the shape of snapshot.json.
type header struct {
	Format   string        `json:"format"`
	Requests int           `json:"requests"`
	Prompts  []promptEntry `json:"prompts"`
	Pins     []pinEntry    `json:"pins"`
}

type promptEntry struct {
	Version  int    `json:"version"`
	Requests string `json:"requests"`
}

type pinEntry struct {
	Version  int                `json:"version"`
	Requests string             `json:"requests"`
	Config   surface.CallConfig `json:"config"`
	Tools    []jsontext.Value   `json:"tools"`
}

// Files returns the snapshot's files by slash-separated name.
func (s *Snapshot) Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	h := header{Format: Format, Requests: len(s.Requests), Prompts: []promptEntry{}, Pins: []pinEntry{}}
	for i := range s.Prompts {
		h.Prompts = append(h.Prompts, promptEntry{Version: i + 1, Requests: s.ranges(func(r Request) bool { return r.Prompt == i+1 || slices.Contains(r.InHistory, i+1) })})
	}
	for i, p := range s.Pins {
		tools := p.Tools
		if tools == nil {
			tools = []jsontext.Value{}
		}
		h.Pins = append(h.Pins, pinEntry{Version: i + 1, Requests: s.ranges(func(r Request) bool { return r.Pin == i+1 }), Config: p.Config, Tools: tools})
	}
	b, err := json.Marshal(h, jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, err
	}
	files["snapshot.json"] = append(b, '\n')
	var p strings.Builder
	p.WriteString("# System prompt versions\n\nEach request file shows the system prompt as " + SystemPlaceholder + "; snapshot.json says which version each request carries.\n")
	for i, text := range s.Prompts {
		fmt.Fprintf(&p, "\n## prompt %d\n\n%s\n", i+1, text)
	}
	files["prompts.md"] = []byte(p.String())
	for _, r := range s.Requests {
		files[RequestFile(r)] = r.Body
	}
	return files, nil
}

// RequestFile is the file name of a request.
func RequestFile(r Request) string { return fmt.Sprintf("requests/%04d-%s.json", r.N, r.Kind) }

// ranges lists the request numbers that match, as "1-4,7".
func (s *Snapshot) ranges(match func(Request) bool) string {
	var parts []string
	start, prev := 0, 0
	flush := func() {
		switch {
		case start == 0:
		case start == prev:
			parts = append(parts, strconv.Itoa(start))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", start, prev))
		}
	}
	for _, r := range s.Requests {
		if !match(r) {
			continue
		}
		if start != 0 && r.N == prev+1 {
			prev = r.N
			continue
		}
		flush()
		start, prev = r.N, r.N
	}
	flush()
	return strings.Join(parts, ",")
}

// Write writes the snapshot under dir, creating it, and removes request
// files a previous snapshot left that this one does not have.
func (s *Snapshot) Write(dir string) error {
	files, err := s.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "requests"), 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "requests", "*.json"))
	for _, p := range old {
		if _, keep := files["requests/"+filepath.Base(p)]; !keep {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("snapshot: remove stale %s: %w", p, err)
			}
		}
	}
	for _, name := range sortedNames(files) {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), files[name], 0o644); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	return nil
}

// MismatchError is the error of a check that found the snapshot changed.
type MismatchError struct {
	Dir string
	// Changed, Added and Removed name the files that differ ("added": the
	// session has it and the pinned snapshot does not).
	Changed, Added, Removed []string
	// Diff is a readable line diff of every difference.
	Diff string
}

func (e *MismatchError) Error() string {
	var what []string
	if len(e.Changed) > 0 {
		what = append(what, fmt.Sprintf("%d changed (%s)", len(e.Changed), clip(e.Changed)))
	}
	if len(e.Added) > 0 {
		what = append(what, fmt.Sprintf("%d new (%s)", len(e.Added), clip(e.Added)))
	}
	if len(e.Removed) > 0 {
		what = append(what, fmt.Sprintf("%d gone (%s)", len(e.Removed), clip(e.Removed)))
	}
	return fmt.Sprintf("what the model sees changed against the snapshot in %s: %s files\n%s", e.Dir, strings.Join(what, ", "), e.Diff)
}

func clip(names []string) string {
	if len(names) <= 4 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:4], ", ") + fmt.Sprintf(", … %d more", len(names)-4)
}

// Check compares the snapshot with the one pinned in dir. It returns nil
// when they are the same, a *MismatchError with a readable diff when they
// differ, and another error when dir cannot be read.
func (s *Snapshot) Check(dir string) error {
	files, err := s.Files()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "snapshot.json")); err != nil {
		return fmt.Errorf("snapshot: %s holds no snapshot (write one with \"host snapshot SESSION DIR\"): %w", dir, err)
	}
	pinned := map[string][]byte{}
	for _, name := range []string{"snapshot.json", "prompts.md"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			pinned[name] = b
		}
	}
	reqs, _ := filepath.Glob(filepath.Join(dir, "requests", "*.json"))
	for _, p := range reqs {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		pinned["requests/"+filepath.Base(p)] = b
	}
	e := &MismatchError{Dir: dir}
	var diff strings.Builder
	names := sortedNames(files)
	for name := range pinned {
		if _, ok := files[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		want, inPinned := pinned[name]
		got, inNew := files[name]
		switch {
		case !inPinned:
			e.Added = append(e.Added, name)
		case !inNew:
			e.Removed = append(e.Removed, name)
		case bytes.Equal(want, got):
			continue
		default:
			e.Changed = append(e.Changed, name)
		}
		fmt.Fprintf(&diff, "--- %s (pinned)\n+++ %s (session)\n", name, name)
		diff.WriteString(LineDiff(string(want), string(got), 3))
	}
	if len(e.Changed)+len(e.Added)+len(e.Removed) == 0 {
		return nil
	}
	e.Diff = diff.String()
	return e
}

func sortedNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
