package v2

import (
	"errors"
	"fmt"
)

// Case classifies why a v2 log is refused. Cases are stable strings: callers
// and tests may match on them.
type Case string

// The refusal cases. Every refusal leaves nothing written.
const (
	// CaseMalformed: a line that is not one JSON object, a bad envelope
	// (missing or mistyped type/seq/time/data, unknown envelope key,
	// ignorable other than true, non-lossless data), a seq that does not
	// continue the log, a payload the conversion cannot read (message
	// without id/role/content, request/header shape, step numbers,
	// compaction seq lists), a blank line, or a missing header line.
	CaseMalformed Case = "malformed"
	// CaseVersion: the header line is not format version 2.
	CaseVersion Case = "version"
	// CaseUnclassified: an event type outside the classified vocabulary
	// without ignorable: true.
	CaseUnclassified Case = "unclassified-type"
	// CaseV3Shape: a shape that exists only in format v3 (a system/message
	// event, a migratedFrom header marker).
	CaseV3Shape Case = "v3-shape"
	// CaseV3ReplaceKeys: a replace surfaceOp already using the v3 key names
	// startSeq/endSeq instead of the v2 names start/end.
	CaseV3ReplaceKeys Case = "v3-replace-keys"
	// CaseSurfaceKeys: a log-only event carrying a non-empty surfaceOp or
	// sourceEventSeqs.
	CaseSurfaceKeys Case = "surface-keys"
	// CaseFold: a replace whose range is not on the v2 surface, is
	// reversed, or does not cite every node it shadows.
	CaseFold Case = "fold"
	// CaseInexpressible: a v2 event with no v3 form, such as an
	// assistant/message replacement (a v3 replacement must cite what it
	// shadows, and v3 forbids sourceEventSeqs on assistant messages).
	CaseInexpressible Case = "inexpressible"
	// CaseIDCollision: a generated system message id is already used by a
	// message of the input.
	CaseIDCollision Case = "id-collision"
	// CaseHeadTaken: the first recorded prompt must become surface node 0,
	// but history already reached the surface before its step: the prompt
	// would have to move in front of that history (for example a compaction
	// checkpoint already covering the position node 0 needs).
	CaseHeadTaken Case = "head-taken"
	// CaseOutsideStep: a request/header that records the first prompt or a
	// prompt change outside any open step, where no system/message can be
	// committed.
	CaseOutsideStep Case = "outside-step"
	// CaseV3Admission: the converted log fails the v3 admission rules
	// (surface.Restore); the error names the v2 line the failing event
	// came from.
	CaseV3Admission Case = "v3-admission"
	// CaseDerivation: the converted surface would not derive the same wire
	// messages as the v2 log. A safety net: a conversion that passes every
	// other check never reaches it.
	CaseDerivation Case = "derivation"
	// CaseOutput: the output file exists (and overwriting was not asked
	// for) or is the input file.
	CaseOutput Case = "output"
)

// Error is a refusal. Line is the 1-based line of the input that causes it
// (the header is line 1, the event with seq n is line n+2); it is 0 when the
// refusal concerns no single line.
type Error struct {
	Line int
	Seq  int64  // v2 seq of the offending event, -1 when unknown
	Type string // event type, when known
	Case Case
	Msg  string
	Err  error // underlying error, if any
}

func (e *Error) Error() string {
	var b []byte
	if e.Line > 0 {
		b = fmt.Appendf(b, "v2 line %d", e.Line)
	} else {
		b = append(b, "v2 log"...)
	}
	switch {
	case e.Seq >= 0 && e.Type != "":
		b = fmt.Appendf(b, " (seq %d, %s)", e.Seq, e.Type)
	case e.Seq >= 0:
		b = fmt.Appendf(b, " (seq %d)", e.Seq)
	case e.Type != "":
		b = fmt.Appendf(b, " (%s)", e.Type)
	}
	b = fmt.Appendf(b, ": refused (%s): %s", e.Case, e.Msg)
	if e.Err != nil {
		b = fmt.Appendf(b, ": %v", e.Err)
	}
	return string(b)
}

func (e *Error) Unwrap() error { return e.Err }

// CaseOf reports the refusal case of an *Error in err's chain, or "".
func CaseOf(err error) Case {
	var e *Error
	if errors.As(err, &e) {
		return e.Case
	}
	return ""
}

func refuse(line int, seq int64, typ string, c Case, format string, args ...any) *Error {
	return &Error{Line: line, Seq: seq, Type: typ, Case: c, Msg: fmt.Sprintf(format, args...)}
}
