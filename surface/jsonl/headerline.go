package jsonl

// MarshalHeader returns h as a session file's first line (without its
// newline): what a store that keeps no file keeps of a session's header.
func MarshalHeader(h Header) ([]byte, error) { return appendHeader(nil, &h) }

// ParseHeader decodes a header line MarshalHeader made, or a session
// file's first line.
func ParseHeader(line []byte) (Header, error) { return parseHeader(line, "") }
