package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the session-log format version this build reads and writes.
const Version = 3

// FileName is the conventional name of a session's v3 log file.
const FileName = "session.v3.jsonl"

// Header is the physical first line of a session file: storage metadata,
// never an event. It is written once, with the first batch, and never
// rewritten.
type Header struct {
	ID              string
	CreatedAt       int64 // Unix epoch milliseconds
	Cwd             string
	ParentSession   string
	IsSeeded        bool
	Origin          string // "subagent" for a delegated session
	DelegationDepth int64  // 0: absent
	AgentPreset     jsontext.Value
	// Extra holds the members this build does not know, as one JSON object,
	// so that copying a header keeps them. nil when there are none.
	Extra jsontext.Value
}

// Header member names this build knows.
const (
	keyType            = "type"
	keyVersion         = "version"
	keyID              = "id"
	keyCreatedAt       = "createdAt"
	keyCwd             = "cwd"
	keyParentSession   = "parentSession"
	keyIsSeeded        = "isSeeded"
	keyOrigin          = "origin"
	keyDelegationDepth = "delegationDepth"
	keyAgentPreset     = "agentPreset"
)

func knownKey(k string) bool {
	switch k {
	case keyType, keyVersion, keyID, keyCreatedAt, keyCwd, keyParentSession, keyIsSeeded,
		keyOrigin, keyDelegationDepth, keyAgentPreset:
		return true
	}
	return false
}

// appendHeader appends the header line (without its newline) to dst.
func appendHeader(dst []byte, h *Header) ([]byte, error) {
	if h.ID == "" {
		return dst, errors.New("session header: id must be non-empty")
	}
	if h.DelegationDepth < 0 {
		return dst, fmt.Errorf("session header: delegationDepth %d is negative", h.DelegationDepth)
	}
	str := func(key, v string) {
		dst = append(dst, `,"`...)
		dst = append(dst, key...)
		dst = append(dst, `":`...)
		dst, _ = jsontext.AppendQuote(dst, v)
	}
	dst = append(dst, `{"type":"session","version":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	str(keyID, h.ID)
	dst = append(dst, `,"createdAt":`...)
	dst = strconv.AppendInt(dst, h.CreatedAt, 10)
	if h.Cwd != "" {
		str(keyCwd, h.Cwd)
	}
	if h.ParentSession != "" {
		str(keyParentSession, h.ParentSession)
	}
	dst = append(dst, `,"isSeeded":`...)
	dst = strconv.AppendBool(dst, h.IsSeeded)
	if h.Origin != "" {
		str(keyOrigin, h.Origin)
	}
	if h.DelegationDepth != 0 {
		dst = append(dst, `,"delegationDepth":`...)
		dst = strconv.AppendInt(dst, h.DelegationDepth, 10)
	}
	if h.AgentPreset != nil {
		v := h.AgentPreset.Clone()
		if err := v.Compact(); err != nil {
			return dst, fmt.Errorf("session header: agentPreset is not valid JSON: %w", err)
		}
		dst = append(dst, `,"agentPreset":`...)
		dst = append(dst, v...)
	}
	if h.Extra != nil {
		var err error
		if dst, err = appendExtra(dst, h.Extra); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendExtra appends the members of the JSON object extra, each preceded by
// a comma.
func appendExtra(dst []byte, extra jsontext.Value) ([]byte, error) {
	if extra.Kind() != '{' {
		return dst, errors.New("session header: Extra must be a JSON object")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(extra))
	if _, err := dec.ReadToken(); err != nil {
		return dst, fmt.Errorf("session header: Extra: %w", err)
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return dst, fmt.Errorf("session header: Extra: %w", err)
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return dst, fmt.Errorf("session header: Extra: %w", err)
		}
		if knownKey(name) {
			return dst, fmt.Errorf("session header: Extra member %q duplicates a header field", name)
		}
		val = val.Clone()
		val.Compact()
		dst = append(dst, ',')
		dst, _ = jsontext.AppendQuote(dst, name)
		dst = append(dst, ':')
		dst = append(dst, val...)
	}
	return dst, nil
}

// parseHeader decodes line 1. The format version is checked before any
// other member is interpreted, so an older or newer header of another shape
// still reports its version.
func parseHeader(line []byte, path string) (Header, error) {
	bad := func(format string, args ...any) (Header, error) {
		return Header{}, &LineError{Path: path, Line: 1, Seq: -1,
			Err: fmt.Errorf("invalid session header: "+format, args...)}
	}
	type member struct {
		name string
		val  jsontext.Value
	}
	var ms []member
	dec := jsontext.NewDecoder(bytes.NewReader(line))
	tok, err := dec.ReadToken()
	if err != nil {
		return bad("%v", err)
	}
	if tok.Kind() != '{' {
		return bad("line 1 is not a JSON object")
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return bad("%v", err)
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return bad("%v", err)
		}
		ms = append(ms, member{name, val.Clone()})
	}
	if _, err := dec.ReadToken(); err != nil {
		return bad("%v", err)
	}
	find := func(k string) jsontext.Value {
		for _, m := range ms {
			if m.name == k {
				return m.val
			}
		}
		return nil
	}
	if t := find(keyType); string(t) != `"session"` {
		return bad(`"type" must be "session", got %s`, orAbsent(t))
	}
	v := find(keyVersion)
	version, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return bad(`"version" must be an integer, got %s`, orAbsent(v))
	}
	if version != Version {
		return Header{}, &VersionError{Path: path, Version: version}
	}
	var h Header
	str := func(k string, v jsontext.Value, dst *string) error {
		if v.Kind() != '"' {
			return fmt.Errorf("%q must be a string, got %s", k, v)
		}
		s, err := jsontext.AppendUnquote(nil, v)
		*dst = string(s)
		return err
	}
	var extra []byte
	for _, m := range ms {
		var err error
		switch m.name {
		case keyType, keyVersion:
		case keyID:
			err = str(m.name, m.val, &h.ID)
		case keyCwd:
			err = str(m.name, m.val, &h.Cwd)
		case keyParentSession:
			err = str(m.name, m.val, &h.ParentSession)
		case keyOrigin:
			err = str(m.name, m.val, &h.Origin)
		case keyCreatedAt:
			h.CreatedAt, err = parseCreatedAt(m.val)
		case keyIsSeeded:
			switch m.val.Kind() {
			case 't':
				h.IsSeeded = true
			case 'f':
			default:
				err = fmt.Errorf(`"isSeeded" must be a boolean, got %s`, m.val)
			}
		case keyDelegationDepth:
			h.DelegationDepth, err = strconv.ParseInt(string(m.val), 10, 64)
			if err != nil || h.DelegationDepth < 0 {
				err = fmt.Errorf(`"delegationDepth" must be a non-negative integer, got %s`, m.val)
			}
		case keyAgentPreset:
			h.AgentPreset = m.val.Clone()
		default:
			if extra == nil {
				extra = []byte{'{'}
			} else {
				extra = append(extra, ',')
			}
			extra, _ = jsontext.AppendQuote(extra, m.name)
			extra = append(extra, ':')
			extra = append(extra, m.val...)
		}
		if err != nil {
			return bad("%v", err)
		}
	}
	if h.ID == "" {
		return bad(`"id" must be a non-empty string`)
	}
	if extra != nil {
		h.Extra = append(extra, '}')
	}
	return h, nil
}

// parseCreatedAt accepts epoch milliseconds, or an RFC 3339 timestamp as
// some writers record it.
func parseCreatedAt(v jsontext.Value) (int64, error) {
	switch v.Kind() {
	case '0':
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return n, nil
		}
	case '"':
		s, err := jsontext.AppendUnquote(nil, v)
		if err == nil {
			if t, err := time.Parse(time.RFC3339Nano, string(s)); err == nil {
				return t.UnixMilli(), nil
			}
		}
	}
	return 0, fmt.Errorf(`"createdAt" must be epoch milliseconds or an RFC 3339 time, got %s`, v)
}

func orAbsent(v jsontext.Value) string {
	if v == nil {
		return "nothing"
	}
	return string(v)
}
