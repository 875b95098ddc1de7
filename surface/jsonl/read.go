package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// Loaded is a session file read and validated.
type Loaded struct {
	Header Header
	// Log is the restored log: every event passed the same admission as an
	// append.
	Log *surface.Log
	// Size is the length of the committed content: the bytes through the
	// last newline, where the next append goes.
	Size int64
	// Torn is the length of the torn tail (the bytes after the last
	// newline), which the load dropped; 0 when the file ends in a newline.
	Torn int64
	// Events is the number of events loaded.
	Events int64
}

// Load reads and validates the session file at path. It neither locks nor
// changes the file; Open is the writer's counterpart. A path that is not
// a regular file (a directory, named pipe or device) is refused with a
// *NotRegularError before anything is read.
func Load(path string, opts ...Option) (*Loaded, error) {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("load session log: %w", err)
	}
	defer f.Close()
	return read(f, path, newConfig(opts))
}

// Read reads and validates a session log from r.
func Read(r io.Reader, opts ...Option) (*Loaded, error) {
	return read(r, "", newConfig(opts))
}

// chunk is a run of whole lines decoded by one worker.
type chunk struct {
	buf   []byte // lines, each ending in '\n'
	size  int64  // len(buf); buf is recycled once decoded
	line  int    // number of the first line
	lines int
	evs   []surface.Event
	err   error // *LineError of the first line that failed to decode
	done  chan struct{}
}

func (c *chunk) decode(dec *surface.Decoder, path string) {
	buf := c.buf
	c.evs = make([]surface.Event, 0, c.lines)
	for k := 0; len(buf) > 0; k++ {
		i := bytes.IndexByte(buf, '\n')
		ev, err := dec.Decode(buf[:i])
		buf = buf[i+1:]
		if err != nil {
			c.err = &LineError{Path: path, Line: c.line + k, Seq: seqOf(err), Err: err}
			return
		}
		c.evs = append(c.evs, ev)
	}
}

func seqOf(err error) int64 {
	var e *surface.Error
	if errors.As(err, &e) {
		return e.Seq
	}
	return -1
}

// splitter cuts a stream into line-aligned blocks of about size bytes,
// reading each byte once. After the last block, carry holds the torn tail.
type splitter struct {
	r     io.Reader
	size  int
	carry []byte
	eof   bool
	free  chan []byte
}

func (s *splitter) get(n int) []byte {
	select {
	case b := <-s.free:
		if cap(b) >= n {
			return b[:cap(b)]
		}
	default:
	}
	return make([]byte, n)
}

func (s *splitter) put(b []byte) {
	select {
	case s.free <- b[:0]:
	default:
	}
}

// next returns the next block of whole lines, or nil at the end of input.
func (s *splitter) next() ([]byte, error) {
	if s.eof {
		return nil, nil
	}
	buf := s.get(len(s.carry) + s.size)
	n := copy(buf, s.carry)
	s.carry = s.carry[:0]
	scanned := 0
	for {
		m, err := io.ReadFull(s.r, buf[n:])
		n += m
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			s.eof = true
		default:
			return nil, err
		}
		if i := bytes.LastIndexByte(buf[scanned:n], '\n'); i >= 0 {
			i += scanned
			s.carry = append(s.carry, buf[i+1:n]...)
			return buf[:i+1], nil
		}
		if s.eof {
			s.carry = append(s.carry, buf[:n]...)
			s.put(buf)
			return nil, nil
		}
		// A line longer than the buffer: double it and read on.
		scanned = n
		grown := make([]byte, 2*len(buf))
		copy(grown, buf[:n])
		buf = grown
	}
}

// read is the streaming loader: one goroutine splits the input into
// line-aligned blocks, GOMAXPROCS workers decode blocks with their own
// surface.Decoder (which also parses the payloads admission needs, the
// costly part of admission), and the calling goroutine collects the events
// in order and restores the log from them. At most a few blocks of the
// input are held at a time.
func read(r io.Reader, path string, cfg *config) (*Loaded, error) {
	sp := &splitter{r: r, size: cfg.block, free: make(chan []byte, 3*cfg.workers+2)}
	first, err := sp.next()
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", nameOf(path), err)
	}
	if first == nil {
		if len(sp.carry) == 0 {
			return nil, fmt.Errorf("%s: empty file: no session header", nameOf(path))
		}
		return nil, &LineError{Path: path, Line: 1, Seq: -1,
			Err: errors.New("the session header lacks its newline: the file is incomplete")}
	}
	i := bytes.IndexByte(first, '\n')
	h, err := parseHeader(first[:i], path)
	if err != nil {
		return nil, err
	}
	ld := &Loaded{Header: h, Size: int64(i + 1)}

	work := make(chan *chunk, cfg.workers)
	order := make(chan *chunk, 2*cfg.workers)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Prepare moves payload parsing off the sequential admission.
			// Alias: the events keep their block's memory, so blocks are
			// never reused and the data is not copied a second time.
			dec := surface.Decoder{Prepare: true, Alias: true}
			for c := range work {
				c.decode(&dec, path)
				c.buf = nil
				close(c.done)
			}
		}()
	}
	var (
		readErr  error
		nextLine = 2
	)
	go func() {
		defer close(order)
		defer close(work)
		buf := first[i+1:]
		for buf != nil {
			n := bytes.Count(buf, []byte{'\n'})
			c := &chunk{buf: buf, size: int64(len(buf)), line: nextLine, lines: n, done: make(chan struct{})}
			nextLine += n
			select {
			case order <- c:
			case <-quit:
				return
			}
			work <- c
			if buf, readErr = sp.next(); readErr != nil {
				return
			}
		}
	}()

	// Admit the decoded events in order while later blocks are still being
	// decoded, into a log sized from the input's length when it is known.
	var log *surface.Log
	if cfg.each == nil {
		log = surface.New(cfg.logOpts...)
		if n := sizeHint(r); n > 0 {
			log.Grow(int(n / 256))
		}
	}
	var badErr error
	for c := range order {
		<-c.done
		if cfg.each != nil && badErr == nil {
			for k, e := range c.evs {
				if err := cfg.each(e); err != nil {
					badErr = err
					var se *surface.Error
					if errors.As(err, &se) {
						badErr = &LineError{Path: path, Line: c.line + k, Seq: seqOf(err), Err: err}
					}
					break
				}
				ld.Events++
			}
		} else if !cfg.noAdmit && badErr == nil {
			for k, e := range c.evs {
				if err := log.Admit(e); err != nil {
					badErr = &LineError{Path: path, Line: c.line + k, Seq: seqOf(err), Err: err}
					break
				}
				ld.Events++
			}
		}
		c.evs = nil
		if badErr == nil && c.err != nil {
			badErr = c.err
		}
		if badErr != nil {
			close(quit)
			break
		}
		ld.Size += c.size
	}
	wg.Wait() // the workers end after the splitter closed work
	if badErr == nil && readErr != nil {
		return nil, fmt.Errorf("%s: read: %w", nameOf(path), readErr)
	}
	if badErr != nil {
		return nil, badErr
	}
	if err := checkTorn(sp.carry, nextLine, path); err != nil {
		return nil, err
	}
	ld.Torn = int64(len(sp.carry))
	ld.Log = log
	return ld, nil
}

// sizeHint is the input's length when r is a file, else 0.
func sizeHint(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return 0
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return st.Size()
}

func nameOf(path string) string {
	if path == "" {
		return "session log"
	}
	return path
}

// ReadEvents decodes a session log sequentially without validating it: the
// header, the events of the complete lines in file order, and the length
// of the torn tail (the bytes after the last newline, which it drops). A
// complete line that does not decode, or a torn tail holding a retired
// v3-forbidden shape, fails with a *LineError. It holds one line at a time
// besides the events; lines may be of any length.
func ReadEvents(r io.Reader) (Header, []surface.Event, int64, error) {
	lr := lineReader{br: bufio.NewReaderSize(r, 1<<20)}
	line, err := lr.next()
	switch {
	case err == io.EOF && len(lr.tail) == 0:
		return Header{}, nil, 0, errors.New("session log: empty file: no session header")
	case err == io.EOF:
		return Header{}, nil, 0, &LineError{Line: 1, Seq: -1,
			Err: errors.New("the session header lacks its newline: the file is incomplete")}
	case err != nil:
		return Header{}, nil, 0, fmt.Errorf("session log: read: %w", err)
	}
	h, err := parseHeader(line, "")
	if err != nil {
		return Header{}, nil, 0, err
	}
	var (
		dec surface.Decoder
		evs []surface.Event
	)
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return h, nil, 0, fmt.Errorf("session log: read: %w", err)
		}
		ev, err := dec.Decode(line)
		if err != nil {
			return h, nil, 0, &LineError{Line: lr.n, Seq: seqOf(err), Err: err}
		}
		evs = append(evs, ev)
	}
	if err := checkTorn(lr.tail, lr.n+1, ""); err != nil {
		return h, nil, 0, err
	}
	return h, evs, int64(len(lr.tail)), nil
}

// lineReader returns the complete lines of a stream one at a time, with no
// limit on their length.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	n    int    // lines returned
	tail []byte // at io.EOF: the bytes after the last newline
}

// next returns the next line without its newline; the slice is valid until
// the next call. At the end it returns io.EOF and sets tail.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.br.ReadSlice('\n')
	if err == nil {
		lr.n++
		return b[:len(b)-1], nil
	}
	lr.long = append(lr.long[:0], b...)
	for err == bufio.ErrBufferFull {
		b, err = lr.br.ReadSlice('\n')
		lr.long = append(lr.long, b...)
	}
	switch err {
	case nil:
		lr.n++
		return lr.long[:len(lr.long)-1], nil
	case io.EOF:
		lr.tail = lr.long
		return nil, io.EOF
	}
	return nil, err
}

// checkTorn refuses a torn tail that holds a retired v3-forbidden shape: such
// a file is an old-format log, never a crash artefact, and truncating it
// would destroy data. Any other torn tail is dropped.
func checkTorn(tail []byte, line int, path string) error {
	if len(tail) == 0 {
		return nil
	}
	why, seq := retired(tail)
	if why == "" {
		return nil
	}
	return &LineError{Path: path, Line: line, Seq: seq, Torn: true, Err: errors.New(why)}
}

// retired reports the retired v3-forbidden shape a line holds, if it is a
// complete JSON object with one: a request/header carrying header.system or
// the legacy reason "fallback", the legacy request/header-delta and
// assistant/chunk events, or a replace surfaceOp with the pre-v3 keys
// start/end.
func retired(line []byte) (why string, seq int64) {
	var ev struct {
		Type      string         `json:"type"`
		Seq       *int64         `json:"seq"`
		Data      jsontext.Value `json:"data"`
		SurfaceOp jsontext.Value `json:"surfaceOp"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return "", -1
	}
	seq = -1
	if ev.Seq != nil {
		seq = *ev.Seq
	}
	switch ev.Type {
	case "request/header-delta", "assistant/chunk":
		return fmt.Sprintf("retired event type %s (formats before v3)", ev.Type), seq
	case surface.TypeRequestHeader:
		var d struct {
			Header struct {
				System jsontext.Value `json:"system"`
			} `json:"header"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(ev.Data, &d) == nil {
			if d.Header.System != nil {
				return "request/header carries header.system, which format v3 refuses: the prompt is a system/message", seq
			}
			if d.Reason == "fallback" {
				return `request/header has the retired reason "fallback"`, seq
			}
		}
	}
	if ev.SurfaceOp.Kind() == '{' {
		var op map[string]jsontext.Value
		if json.Unmarshal(ev.SurfaceOp, &op) == nil {
			_, start := op["start"]
			_, end := op["end"]
			if start || end {
				return "replace surfaceOp uses the pre-v3 keys start/end (v3: startSeq/endSeq)", seq
			}
		}
	}
	return "", seq
}
