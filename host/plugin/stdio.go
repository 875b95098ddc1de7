package plugin

import (
	"bytes"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// stdio is a bounded sink for one guest stream. Bytes past the limit are
// counted and dropped. An instance is used by one call at a time, so no
// locking is needed.
type stdio struct {
	limit   int
	buf     bytes.Buffer
	dropped int
}

func (s *stdio) Write(p []byte) (int, error) {
	n := len(p) // report everything written: dropping is silent to the guest
	room := s.limit - s.buf.Len()
	if room < len(p) {
		s.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	s.buf.Write(p)
	return n, nil
}

// flush logs the collected lines under the plugin's logger and resets.
func (s *stdio) flush(log hclog.Logger, stream string) {
	if s.buf.Len() == 0 && s.dropped == 0 {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(s.buf.String(), "\n"), "\n") {
		if stream == "stderr" {
			log.Warn("guest output", "stream", stream, "line", line)
		} else {
			log.Info("guest output", "stream", stream, "line", line)
		}
	}
	if s.dropped > 0 {
		log.Warn("guest output truncated", "stream", stream, "dropped_bytes", s.dropped)
	}
	s.buf.Reset()
	s.dropped = 0
}

// excerpt picks the most telling line of guest stderr for an error message:
// the Go runtime's "fatal error:" or "panic:" line, else the last line.
func (s *stdio) excerpt() string {
	text := strings.TrimSpace(s.buf.String())
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	pick := lines[len(lines)-1]
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			pick = l
			break
		}
	}
	pick = strings.TrimSpace(pick)
	if len(pick) > 200 {
		pick = pick[:200] + "..."
	}
	return pick
}
