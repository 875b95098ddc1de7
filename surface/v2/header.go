package v2

import (
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Header is the physical first line of a session log
// ({"type":"session","version":N,"id":...,...}): storage metadata, never an
// event.
type Header struct {
	Version int
	ID      string
	// MigratedFrom is the format a converted log came from (2); 0 when the
	// header has no migratedFrom member.
	MigratedFrom int
	// Fields are the other members (createdAt, cwd, parentSession,
	// isSeeded, origin, delegationDepth, agentPreset, ...) in input order,
	// values byte-exact.
	Fields []Field
}

// Field is one header member.
type Field struct {
	Name  string
	Value jsontext.Value
}

// Field returns the value of the member name.
func (h *Header) Field(name string) (jsontext.Value, bool) {
	for _, f := range h.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// AppendJSON appends the header line (no newline): type, version and id
// first, then Fields in order, then migratedFrom when set.
func (h *Header) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":"session","version":`...)
	dst = strconv.AppendInt(dst, int64(h.Version), 10)
	dst = append(dst, `,"id":`...)
	dst = append(dst, quote(h.ID)...)
	for _, f := range h.Fields {
		dst = append(dst, ',')
		dst = append(dst, quote(f.Name)...)
		dst = append(dst, ':')
		dst = append(dst, f.Value...)
	}
	if h.MigratedFrom != 0 {
		dst = append(dst, `,"migratedFrom":`...)
		dst = strconv.AppendInt(dst, int64(h.MigratedFrom), 10)
	}
	return append(dst, '}')
}

// checkField applies the v3 store's rules to the header members it knows,
// so that a converted header always loads; it returns what is wrong, or "".
func checkField(name string, v jsontext.Value) string {
	switch name {
	case "cwd", "parentSession", "origin":
		if v.Kind() != '"' {
			return name + " must be a string, got " + string(v)
		}
	case "isSeeded":
		if v.Kind() != 't' && v.Kind() != 'f' {
			return "isSeeded must be a boolean, got " + string(v)
		}
	case "delegationDepth":
		if n, err := strconv.ParseInt(string(v), 10, 64); err != nil || n < 0 {
			return "delegationDepth must be a non-negative integer, got " + string(v)
		}
	case "createdAt":
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil && v.Kind() == '0' {
			return ""
		}
		if v.Kind() == '"' {
			if _, err := time.Parse(time.RFC3339Nano, unquote(v)); err == nil {
				return ""
			}
		}
		return "createdAt must be epoch milliseconds or an RFC 3339 time, got " + string(v)
	}
	return ""
}

// parseHeader reads a v2 header line.
func parseHeader(line []byte) (Header, *Error) {
	bad := func(c Case, format string, args ...any) (Header, *Error) {
		return Header{}, refuse(1, -1, "", c, format, args...)
	}
	ms, err := members(line)
	if err != nil {
		return Header{}, &Error{Line: 1, Seq: -1, Case: CaseMalformed, Msg: "the header line is not one JSON object", Err: err}
	}
	var h Header
	var hasType, hasVersion, hasID bool
	for _, m := range ms {
		switch m.name {
		case "type":
			if m.value.Kind() != '"' || unquote(m.value) != "session" {
				return bad(CaseMalformed, `header type must be "session", got %s`, m.value)
			}
			hasType = true
		case "version":
			n, ok := parseInt(m.value)
			if !ok {
				return bad(CaseMalformed, "header version %s is not an integer", m.value)
			}
			h.Version, hasVersion = int(n), true
		case "id":
			if m.value.Kind() != '"' || unquote(m.value) == "" {
				return bad(CaseMalformed, "header id must be a non-empty string, got %s", m.value)
			}
			h.ID, hasID = unquote(m.value), true
		case "migratedFrom":
			return bad(CaseV3Shape, "header carries migratedFrom, a marker of converted v3 logs")
		default:
			if why := checkField(m.name, m.value); why != "" {
				return bad(CaseMalformed, "header %s", why)
			}
			h.Fields = append(h.Fields, Field{Name: m.name, Value: m.value})
		}
	}
	switch {
	case !hasType:
		return bad(CaseMalformed, `header line lacks "type":"session"`)
	case !hasVersion:
		return bad(CaseMalformed, "header line lacks version")
	case h.Version == 3:
		return bad(CaseVersion, "the log is already format v3; there is nothing to convert")
	case h.Version > 3:
		return bad(CaseVersion, "format v%d is newer than this build; upgrade Weir", h.Version)
	case h.Version != 2:
		return bad(CaseVersion, "format v%d predates v2; this importer reads only v2 logs", h.Version)
	case !hasID:
		return bad(CaseMalformed, "header line lacks id")
	}
	return h, nil
}
