package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxLine bounds one SSE line; a longer line fails the stream.
const maxLine = 16 << 20

// sseEvent is one dispatched server-sent event. Data is valid until the
// next call of next.
type sseEvent struct {
	Name string
	Data []byte
}

// sseReader splits a text/event-stream into events (WHATWG HTML, "Server-sent
// events", event stream interpretation): lines end in CRLF, LF or CR; a
// line starting with ':' is a comment (keepalive); "field: value" lines set
// fields, one leading space of the value removed; several data lines join
// with "\n"; a blank line dispatches the event when it has data. An
// unterminated last line is dropped, as the standard requires; an event
// whose lines were all terminated but which lacks the closing blank line is
// still dispatched at end of stream, which tolerates servers that close
// right after their last line.
type sseReader struct {
	r        io.Reader
	buf      []byte
	pos, end int
	eof      bool
	err      error
	started  bool

	data    []byte
	hasData bool
	name    string
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: r, buf: make([]byte, 32<<10)}
}

// next returns the next event, or io.EOF at a clean end of stream, or the
// read error.
func (s *sseReader) next() (sseEvent, error) {
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && s.hasData {
				return s.dispatch(), nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if s.hasData {
				return s.dispatch(), nil
			}
			s.name = ""
			continue
		}
		s.field(line)
	}
}

func (s *sseReader) dispatch() sseEvent {
	d := s.data
	if n := len(d); n > 0 && d[n-1] == '\n' {
		d = d[:n-1]
	}
	ev := sseEvent{Name: s.name, Data: d}
	s.data, s.hasData, s.name = s.data[:0], false, ""
	return ev
}

func (s *sseReader) field(line []byte) {
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		s.data = append(s.data, value...)
		s.data = append(s.data, '\n')
		s.hasData = true
	case "event":
		s.name = string(value)
	}
}

// line returns the next complete line without its terminator, io.EOF at
// the end of the stream or the read error.
func (s *sseReader) line() ([]byte, error) {
	if !s.started {
		for s.end-s.pos < 3 && !s.eof {
			if err := s.fill(); err != nil {
				return nil, err
			}
		}
		if bytes.HasPrefix(s.buf[s.pos:s.end], []byte("\xEF\xBB\xBF")) {
			s.pos += 3
		}
		s.started = true
	}
	for {
		seg := s.buf[s.pos:s.end]
		nl := bytes.IndexByte(seg, '\n')
		cut := seg
		if nl >= 0 {
			cut = seg[:nl]
		}
		if cr := bytes.IndexByte(cut, '\r'); cr >= 0 {
			switch {
			case cr == len(cut)-1 && nl >= 0: // CRLF
				s.pos += nl + 1
				return cut[:cr], nil
			case cr+1 < len(seg): // lone CR with data after it
				s.pos += cr + 1
				return cut[:cr], nil
			case s.eof: // CR is the last byte of the stream
				s.pos += cr + 1
				return cut[:cr], nil
			}
			// CR is the last buffered byte: a LF may follow.
		} else if nl >= 0 {
			s.pos += nl + 1
			return cut, nil
		}
		if s.eof {
			if s.err != nil {
				return nil, s.err
			}
			return nil, io.EOF
		}
		if err := s.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more input, compacting or growing the buffer.
func (s *sseReader) fill() error {
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:s.end])
		s.pos, s.end = 0, n
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= maxLine {
			return fmt.Errorf("an SSE line exceeds %d bytes", maxLine)
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	n, err := s.r.Read(s.buf[s.end:])
	s.end += n
	if err != nil {
		s.eof = true
		if !errors.Is(err, io.EOF) {
			s.err = err
		}
	}
	return nil
}
