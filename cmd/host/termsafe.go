package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host/config"
)

// termSafe makes a string that a plugin, a model, a tool or a log supplied
// safe to show on a terminal: control characters (C0 but newline and tab,
// DEL, C1), bidirectional formatting characters (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069) and bytes that are not UTF-8 are written
// as visible escapes (\x1b, \u202e), so text cannot move the cursor, recolour
// the screen or reorder what follows it. Use termLine where the text must
// stay on one line.
func termSafe(s string) string { return escapeTerm(s, true, false) }

// termLine is termSafe that also escapes newlines and tabs.
func termLine(s string) string { return escapeTerm(s, false, false) }

// termWriter escapes what is written through it with termSafe; for JSON
// lines (asJSON) it writes \u escapes only, so each line stays valid JSON
// with the same meaning. The logger writes through it: plugins supply
// log messages.
type termWriter struct {
	w      io.Writer
	asJSON bool
}

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, escapeTerm(string(p), true, t.asJSON)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// newLogger is the host's logger on standard error, escaped for the
// terminal.
func newLogger(c config.Log, stderr io.Writer) hclog.Logger {
	return config.NewLogger(c, termWriter{w: stderr, asJSON: c.Format == "json"})
}

func escapeTerm(s string, multiline, asJSON bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n, multiline) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1 && asJSON:
			b.WriteString(`\ufffd`)
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, n, multiline):
			b.WriteString(s[i : i+n])
		case asJSON:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune, size int, multiline bool) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true
	case r == '\n' || r == '\t':
		return !multiline
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
