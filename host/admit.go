package host

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// Rules of the host's trust boundary, checked for every proposer but the
// loop on top of the log's own admission (surface.Rule). They are stable
// strings: callers and tests may match on them.
const (
	// A message proposed by a provider must carry the source
	// {kind: "plugin", plugin: <the provider's configured name>}.
	RuleProvenance surface.Rule = "provenance/source"
	// compaction/start, summary, end and prune data must follow their schema.
	RuleCompactionSchema surface.Rule = "compaction/schema"
	// Brackets in one batch: start, at most one summary, the checkpoint
	// after it, end, all with the bracket's id; every bracket opened is closed.
	RuleCompactionBracket surface.Rule = "compaction/bracket"
	// A type outside the proposer's own must be declared in describe.
	RuleUndeclaredEvent surface.Rule = "events/undeclared"
	// A declared event type is proposed only as an ignorable event.
	RuleDeclaredNotIgnorable surface.Rule = "events/not-ignorable"
	// A declared (ignorable) event never touches the surface.
	RuleDeclaredSurfaceOp surface.Rule = "events/surface-op"
	// A declared event's data is at most MaxDeclaredEventBytes.
	RuleDeclaredTooLarge surface.Rule = "events/too-large"
	// RuleUniqueID: a message a provider proposes onto the surface has an
	// id no other surface node holds.
	RuleUniqueID surface.Rule = "message/unique-id"
	// RuleDeclaredBudget: the declared events of a batch and of a turn
	// stay within their count and byte budgets.
	RuleDeclaredBudget surface.Rule = "events/budget"
)

// Bounds of what a provider may say.
const (
	// MaxCount bounds every token or byte count a provider reports (2^40).
	MaxCount int64 = 1 << 40
	// MaxDeclaredEventBytes bounds the data of one declared event (64 KiB).
	MaxDeclaredEventBytes = 64 << 10
	// MaxDeclaredPerCall and MaxDeclaredBytesPerCall bound the declared
	// events of one batch; MaxDeclaredPerTurn and MaxDeclaredBytesPerTurn
	// those a proposer's types add to one turn, this batch included
	// (RuleDeclaredBudget).
	MaxDeclaredPerCall      = 8
	MaxDeclaredBytesPerCall = 256 << 10
	MaxDeclaredPerTurn      = 32
	MaxDeclaredBytesPerTurn = 384 << 10
	// maxIDBytes bounds a compaction id.
	maxIDBytes = 256
)

// DeclaredEvents is implemented by a provider that may propose ignorable
// event types besides its kind's own (a plugin lists them in describe).
type DeclaredEvents interface {
	DeclaredEvents() []string
}

// compactionProposer is the proposer of compaction provider c.
func compactionProposer(c CompactionProvider) Proposer {
	by := Proposer{Kind: ByCompaction, ID: c.ID()}
	if d, ok := c.(DeclaredEvents); ok {
		by.Events = d.DeclaredEvents()
	}
	return by
}

// declared reports whether typ is one of the proposer's declared types.
func (p Proposer) declared(typ string) bool {
	return !surface.Known(typ) && slices.Contains(p.Events, typ)
}

// refuse is the error of proposal i of a batch starting at seq first.
func refuse(first int64, i int, typ string, rule surface.Rule, format string, args ...any) error {
	return &surface.Error{Seq: first + int64(i), Type: typ, Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// checkDeclared enforces the rules of declared event types: an event of a
// type the proposer's kind does not own is one it declared, ignorable,
// log-only and bounded.
func checkDeclared(by Proposer, first int64, ps []surface.Proposal) error {
	for i := range ps {
		p := &ps[i]
		if surface.Known(p.Type) {
			continue
		}
		if p.Type == TypePluginState {
			if err := checkPluginState(by, first, i, p); err != nil {
				return err
			}
			continue
		}
		switch {
		case !by.declared(p.Type):
			return refuse(first, i, p.Type, RuleUndeclaredEvent,
				"%q is not a type of the %s kind, and the plugin did not declare it (describe events: %q)", p.Type, by.Kind, by.Events)
		case !p.Ignorable:
			return refuse(first, i, p.Type, RuleDeclaredNotIgnorable, "the declared event type %q must be proposed with ignorable: true", p.Type)
		case p.Op.Kind != surface.OpNone || p.Sources != nil:
			return refuse(first, i, p.Type, RuleDeclaredSurfaceOp, "the declared event type %q is ignorable and log-only: it must not carry surfaceOp or sourceEventSeqs", p.Type)
		case len(p.Data) > MaxDeclaredEventBytes:
			return refuse(first, i, p.Type, RuleDeclaredTooLarge, "the %q event has %d bytes of data, more than %d", p.Type, len(p.Data), MaxDeclaredEventBytes)
		}
	}
	return nil
}

// checkDeclaredBudget bounds the declared events of batch ps (its first
// event at seq first) by count and bytes, alone and with those of the
// proposer's declared types already in the log since the latest
// turn/start.
func checkDeclaredBudget(by Proposer, log *surface.Log, first int64, ps []surface.Proposal) error {
	n, size, last := 0, 0, -1
	for i := range ps {
		if !surface.Known(ps[i].Type) && by.declared(ps[i].Type) {
			n, size, last = n+1, size+len(ps[i].Data), i
		}
	}
	if n == 0 {
		return nil
	}
	typ := ps[last].Type
	if n > MaxDeclaredPerCall || size > MaxDeclaredBytesPerCall {
		return refuse(first, last, typ, RuleDeclaredBudget, "%d declared events of %d bytes in one call, more than %d events or %d bytes",
			n, size, MaxDeclaredPerCall, MaxDeclaredBytesPerCall)
	}
	evs := log.Events()
	tn, tsize := n, size
	for i := len(evs) - 1; i >= 0 && evs[i].Type != surface.TypeTurnStart; i-- {
		if by.declared(evs[i].Type) {
			tn, tsize = tn+1, tsize+len(evs[i].Data)
		}
	}
	if tn > MaxDeclaredPerTurn || tsize > MaxDeclaredBytesPerTurn {
		return refuse(first, last, typ, RuleDeclaredBudget, "%d declared events of %d bytes in this turn with this call's, more than %d events or %d bytes",
			tn, tsize, MaxDeclaredPerTurn, MaxDeclaredBytesPerTurn)
	}
	return nil
}

// checkProvenance enforces that every message a provider proposes speaks
// for that provider: source {kind: "plugin", plugin: <its name>}. Tool
// result rewrites keep the tool's source (the fold checks that they change
// nothing but the result's content).
func checkProvenance(by Proposer, first int64, ps []surface.Proposal) error {
	for i := range ps {
		p := &ps[i]
		switch p.Type {
		case surface.TypeUserMessage, surface.TypeSystemMessage:
		default:
			continue
		}
		src, ok := sourceOf(p.Type, p.Data)
		if !ok {
			continue // the log's payload check refuses it
		}
		if src.Kind != "plugin" || src.Plugin != by.ID {
			return refuse(first, i, p.Type, RuleProvenance,
				"the message claims source {kind: %q, plugin: %q}; a message proposed by %s must carry source {kind: \"plugin\", plugin: %q}",
				src.Kind, src.Plugin, by, by.ID)
		}
	}
	return nil
}

// sourceOf decodes the source of a message event's data.
func sourceOf(typ string, data []byte) (surface.Source, bool) {
	var m struct {
		Source  *surface.Source `json:"source"`
		Message *struct {
			Source *surface.Source `json:"source"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &m) != nil {
		return surface.Source{}, false
	}
	if typ == surface.TypeUserMessage {
		if m.Source == nil {
			return surface.Source{}, false
		}
		return *m.Source, true
	}
	if m.Message == nil || m.Message.Source == nil {
		return surface.Source{}, false
	}
	return *m.Message.Source, true
}

// fields is an event's data as its members, undecoded.
type fields map[string]jsontext.Value

func (f fields) present(k string) bool {
	v, ok := f[k]
	return ok && v.Kind() != 'n'
}

// str reads a string member.
func (f fields) str(k string) (string, bool) {
	v, ok := f[k]
	if !ok || v.Kind() != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

// integer reads an integer member written without fraction or exponent.
func (f fields) integer(k string) (int64, bool) {
	v, ok := f[k]
	if !ok || v.Kind() != '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// count checks an optional count member: absent or an integer in [0, MaxCount].
func (f fields) count(k string) error {
	if _, ok := f[k]; !ok {
		return nil
	}
	n, ok := f.integer(k)
	if !ok || n < 0 || n > MaxCount {
		return fmt.Errorf("%s is %s, not an integer from 0 to %d", k, f[k], MaxCount)
	}
	return nil
}

// printable reports whether s is non-empty, at most max bytes and made of
// printable characters.
func printable(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// bracket is the state of the compaction bracket a batch is inside.
type bracket struct {
	id         string
	turn       jsontext.Value
	at         int // index of the start
	summary    int // index of the summary, -1 when none yet
	checkpoint int // index of the checkpoint, -1 when none yet
}

// checkCompaction checks the compaction/* events of a compaction
// provider's batch against their schemas and the bracket order. turn is
// the open turn (0 when none); first the seq of the batch's first event.
func checkCompaction(first int64, turn int64, ps []surface.Proposal) error {
	var open *bracket
	for i := range ps {
		p := &ps[i]
		seq := first + int64(i)
		bad := func(rule surface.Rule, format string, args ...any) error {
			return refuse(first, i, p.Type, rule, format, args...)
		}
		isCheckpoint := p.Type == surface.TypeUserMessage && p.Op.Kind == surface.OpReplace
		if !strings.HasPrefix(p.Type, "compaction/") && !isCheckpoint {
			continue
		}
		if isCheckpoint {
			switch {
			case open == nil:
				return bad(RuleCompactionBracket, "a checkpoint must sit inside a compaction bracket (compaction/start .. compaction/end of the same batch)")
			case open.summary < 0:
				return bad(RuleCompactionBracket, "the checkpoint of compaction %q comes before its compaction/summary", open.id)
			case open.checkpoint >= 0:
				return bad(RuleCompactionBracket, "compaction %q already has a checkpoint at seq %d", open.id, first+int64(open.checkpoint))
			}
			if id, ok := checkpointID(p.Data); ok && id != open.id {
				return bad(RuleCompactionBracket, "the checkpoint names compaction %q inside the bracket of compaction %q", id, open.id)
			}
			open.checkpoint = i
			continue
		}
		var f fields
		if err := json.Unmarshal(p.Data, &f); err != nil {
			continue // the log's envelope check refuses it
		}
		id, _ := f.str("compactionId")
		if p.Type != surface.TypeCompactionPrune && !printable(id, maxIDBytes) {
			return bad(RuleCompactionSchema, "compactionId must be a non-empty printable string of at most %d bytes", maxIDBytes)
		}
		switch p.Type {
		case surface.TypeCompactionStart:
			if open != nil {
				return bad(RuleCompactionBracket, "compaction %q starts inside compaction %q, opened at seq %d", id, open.id, first+int64(open.at))
			}
			if err := checkTurn(f, turn); err != nil {
				return bad(RuleCompactionSchema, "%v", err)
			}
			open = &bracket{id: id, turn: f["turn"], at: i, summary: -1, checkpoint: -1}
		case surface.TypeCompactionSummary:
			switch {
			case open == nil:
				return bad(RuleCompactionBracket, "compaction/summary of %q has no compaction/start before it in the batch", id)
			case id != open.id:
				return bad(RuleCompactionBracket, "compaction/summary names compaction %q inside the bracket of compaction %q", id, open.id)
			case open.summary >= 0:
				return bad(RuleCompactionBracket, "compaction %q already has a summary at seq %d", id, first+int64(open.summary))
			}
			if err := checkShadowed(f, seq); err != nil {
				return bad(RuleCompactionSchema, "%v", err)
			}
			if err := f.count("maxTokens"); err != nil {
				return bad(RuleCompactionSchema, "%v", err)
			}
			if _, ok := f["summary"]; ok {
				if _, ok := f.str("summary"); !ok {
					return bad(RuleCompactionSchema, "summary must be a string")
				}
			}
			if err := checkUsage(f); err != nil {
				return bad(RuleCompactionSchema, "%v", err)
			}
			open.summary = i
		case surface.TypeCompactionEnd:
			switch {
			case open == nil:
				return bad(RuleCompactionBracket, "compaction/end of %q has no compaction/start before it in the batch", id)
			case id != open.id:
				return bad(RuleCompactionBracket, "compaction/end names compaction %q, but the open bracket is compaction %q", id, open.id)
			}
			for _, k := range []string{"tokensBefore", "tokensAfter"} {
				if err := f.count(k); err != nil {
					return bad(RuleCompactionSchema, "%v", err)
				}
			}
			if t, ok := f["turn"]; ok && !sameTurn(t, open.turn) {
				return bad(RuleCompactionSchema, "compaction/end names turn %s, its compaction/start turn %s", orNull(t), orNull(open.turn))
			}
			failed := f.present("error")
			if failed {
				if _, ok := f.str("error"); !ok {
					return bad(RuleCompactionSchema, "error must be a string")
				}
				if open.checkpoint >= 0 {
					return bad(RuleCompactionBracket, "compaction %q ends with an error after its checkpoint at seq %d", id, first+int64(open.checkpoint))
				}
			} else if open.summary < 0 {
				return bad(RuleCompactionBracket, "compaction %q ends successfully without a compaction/summary", id)
			}
			open = nil
		case surface.TypeCompactionPrune:
			if err := checkShadowed(f, seq); err != nil {
				return bad(RuleCompactionSchema, "%v", err)
			}
			if err := f.count("bytes"); err != nil {
				return bad(RuleCompactionSchema, "%v", err)
			}
		default:
			return bad(RuleUndeclaredEvent, "%q is not a compaction event type (compaction/start, summary, end, prune)", p.Type)
		}
	}
	if open != nil {
		return refuse(first, open.at, surface.TypeCompactionStart, RuleCompactionBracket,
			"compaction %q is opened and never closed: a batch closes every bracket it opens", open.id)
	}
	return nil
}

func orNull(v jsontext.Value) string {
	if v == nil {
		return "null"
	}
	return string(v)
}

// sameTurn compares two turn members; absent, null and 0 are the same.
func sameTurn(a, b jsontext.Value) bool {
	null := func(v jsontext.Value) bool { return v == nil || v.Kind() == 'n' || string(v) == "0" }
	if null(a) || null(b) {
		return null(a) && null(b)
	}
	return string(a) == string(b)
}

// checkTurn checks a bracket's turn: null, absent or 0 between turns; the
// open turn's number inside one.
func checkTurn(f fields, open int64) error {
	if n, ok := f.integer("turn"); !f.present("turn") || ok && n == 0 {
		if open != 0 {
			return fmt.Errorf("turn is null, but turn %d is open: a bracket inside a turn names it", open)
		}
		return nil
	}
	n, ok := f.integer("turn")
	if !ok || n < 0 || n > MaxCount {
		return fmt.Errorf("turn is %s, not null or a turn number", f["turn"])
	}
	if n != open {
		if open == 0 {
			return fmt.Errorf("turn is %d, but no turn is open: a bracket between turns has turn null or 0", n)
		}
		return fmt.Errorf("turn is %d, but the open turn is %d", n, open)
	}
	return nil
}

// checkShadowed checks shadowedSeqs (earlier seqs, distinct), its
// shadowedRange (first and last) and shadowedTokenCount.
func checkShadowed(f fields, seq int64) error {
	raw, ok := f["shadowedSeqs"]
	if !ok {
		return fmt.Errorf("shadowedSeqs is missing")
	}
	var seqs []jsontext.Value
	if json.Unmarshal(raw, &seqs) != nil || len(seqs) == 0 {
		return fmt.Errorf("shadowedSeqs must be a non-empty array of seqs")
	}
	got := make([]int64, len(seqs))
	seen := make(map[int64]bool, len(seqs))
	for i, v := range seqs {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 || n >= seq {
			return fmt.Errorf("shadowedSeqs[%d] is %s, not the seq of an earlier event", i, v)
		}
		if seen[n] {
			return fmt.Errorf("shadowedSeqs has %d twice", n)
		}
		seen[n] = true
		got[i] = n
	}
	if r, ok := f["shadowedRange"]; ok {
		var rg struct {
			Start *int64 `json:"start"`
			End   *int64 `json:"end"`
		}
		if json.Unmarshal(r, &rg) != nil || rg.Start == nil || rg.End == nil {
			return fmt.Errorf("shadowedRange must be {start, end}")
		}
		if *rg.Start != got[0] || *rg.End != got[len(got)-1] {
			return fmt.Errorf("shadowedRange {start: %d, end: %d} does not match the first and last of shadowedSeqs (%d, %d)",
				*rg.Start, *rg.End, got[0], got[len(got)-1])
		}
	}
	return f.count("shadowedTokenCount")
}

// checkUsage checks that every count of a summary's usage is in bounds.
func checkUsage(f fields) error {
	raw, ok := f["usage"]
	if !ok || raw.Kind() == 'n' {
		return nil
	}
	var u fields
	if json.Unmarshal(raw, &u) != nil {
		return fmt.Errorf("usage must be an object")
	}
	for k, v := range u {
		if v.Kind() != '0' {
			continue
		}
		if err := u.count(k); err != nil {
			return fmt.Errorf("usage.%w", err)
		}
	}
	return nil
}

// checkpointID is the compactionId a checkpoint message's source names.
func checkpointID(data []byte) (string, bool) {
	var m struct {
		Source struct {
			ID *string `json:"compactionId"`
		} `json:"source"`
	}
	if json.Unmarshal(data, &m) != nil || m.Source.ID == nil {
		return "", false
	}
	return *m.Source.ID, true
}

// CheckpointOf returns the compaction id and the proposing plugin of the
// checkpoint committed at seq: a user/message replacement inside a
// compaction bracket, after that bracket's compaction/summary (the order
// admission requires). It finds the checkpoint by the bracket that encloses
// it, never by a fixed plugin name; the plugin is the checkpoint's
// source.plugin, which admission requires to be the proposer's configured
// name. Receipts, inspect and printers use it to pair checkpoints with
// their compactions.
func CheckpointOf(l *surface.Log, seq int64) (id, plugin string, ok bool) {
	e, found := l.Event(seq)
	if !found || e.Type != surface.TypeUserMessage || e.Op.Kind != surface.OpReplace {
		return "", "", false
	}
	m, found := l.Message(seq)
	if !found || m.Source.Kind != "plugin" || m.Source.Plugin == "" {
		return "", "", false
	}
	summary := false
	for s := seq - 1; s >= l.BaseSeq(); s-- {
		prev, _ := l.Event(s)
		switch prev.Type {
		case surface.TypeCompactionSummary:
			summary = true
		case surface.TypeCompactionEnd, surface.TypeEndSeed:
			return "", "", false
		case surface.TypeCompactionStart:
			var d struct {
				ID string `json:"compactionId"`
			}
			if !summary || json.Unmarshal(prev.Data, &d) != nil || d.ID == "" {
				return "", "", false
			}
			if cid, named := checkpointID(e.Data); named && cid != d.ID {
				return "", "", false
			}
			return d.ID, m.Source.Plugin, true
		}
	}
	return "", "", false
}

// screen runs the checks of a provider's batch that need no plan: declared
// event types and provenance. An error refuses the whole batch.
func (s *Session) screen(by Proposer, ps []surface.Proposal) error {
	first := s.log.NextSeq()
	err := checkDeclared(by, first, ps)
	if err == nil {
		err = checkDeclaredBudget(by, s.log, first, ps)
	}
	if err == nil {
		err = checkProvenance(by, first, ps)
	}
	return err
}

// admits runs the checks of a provider's batch ps that read its plan: the
// log planned it as planned (its first event at seq first) and has not
// committed it. They are the compaction schemas and bracket order, then the
// wire rules over the part of the surface the batch changed. An error
// refuses the whole batch.
func (s *Session) admits(by Proposer, planned *surface.Log, first int64, ps []surface.Proposal) error {
	if by.Kind == ByCompaction {
		turn, _ := s.log.OpenTurn()
		if err := checkCompaction(first, turn, ps); err != nil {
			return err
		}
	}
	if err := checkUniqueIDs(planned, first); err != nil {
		return err
	}
	if err := planned.CheckWireSince(first); err != nil {
		return err
	}
	return nil
}

// checkUniqueIDs refuses a batch (its first event at seq first) that puts
// on the planned surface a message whose id another surface node holds:
// a message id names one node (authors.md). Nodes older than the batch
// are not compared with each other.
func checkUniqueIDs(planned *surface.Log, first int64) error {
	nodes := planned.Nodes()
	fresh := false
	for _, seq := range nodes {
		if seq >= first {
			fresh = true
			break
		}
	}
	if !fresh {
		return nil
	}
	held := make(map[string]int64, len(nodes))
	for _, seq := range nodes {
		m, ok := planned.Message(seq)
		if !ok {
			continue
		}
		if other, dup := held[m.ID]; dup && (seq >= first || other >= first) {
			newer, older := max(seq, other), min(seq, other)
			e, _ := planned.Event(newer)
			return refuse(first, int(newer-first), e.Type, RuleUniqueID,
				"message id %q is already held by the surface node at seq %d", m.ID, older)
		}
		held[m.ID] = seq
	}
	return nil
}
