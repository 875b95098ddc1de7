// Command prompt-plugin is an example third-party system-prompt plugin,
// written against the Weir SDK only. Besides the host's prompt sections it
// renders the project's instructions and today's date, both of which the
// host passes as data: a plugin has no filesystem and no real clock, so the
// same inputs always render the same prompt, also on replay.
//
// Host data it reads:
//
//	instructions  the project's instruction text (Markdown, e.g. AGENTS.md)
//	date          today's date, YYYY-MM-DD
//
// The prompt is the host's sections (the non-blank ones, trimmed, separated
// by a blank line, as the built-in renderer does), then the instructions
// under a heading, then one line with the date:
//
//	You are Weir, a coding agent.
//
//	# Project instructions
//
//	## Style
//	Use tabs.
//
//	Today is Thursday, 1 May 2025.
//
// The instructions are split at their level-2 headings ("## "); sections
// whose heading is listed in skipHeadings are left out, and the rest is cut
// at a line boundary after maxBytes with a note saying how much was left
// out.
//
// Configuration (JSON, unknown keys fail the load):
//
//	{"title": "Project instructions", "skipHeadings": ["Release process"], "maxBytes": 16384}
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weirhost/weir/sdk"
)

type config struct {
	Title        string   `json:"title"`
	SkipHeadings []string `json:"skipHeadings"`
	MaxBytes     int      `json:"maxBytes"`
}

func parseConfig(raw []byte) (config, error) {
	c := config{Title: "Project instructions", MaxBytes: 16384}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return c, err
		}
		if _, err := dec.Token(); err != io.EOF {
			return c, errors.New("data after the configuration object")
		}
	}
	if strings.TrimSpace(c.Title) == "" {
		return c, errors.New("title must not be blank")
	}
	if c.MaxBytes < 256 {
		return c, fmt.Errorf("maxBytes must be at least 256, got %d", c.MaxBytes)
	}
	return c, nil
}

type prompt struct{ cfg config }

func (p *prompt) RenderPrompt(_ *sdk.Host, req *sdk.RenderRequest) (string, error) {
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	for _, s := range req.Sections {
		add(s.Text)
	}
	if text := p.instructions(value(req.HostData, "instructions")); text != "" {
		add("# " + p.cfg.Title + "\n\n" + text)
	}
	add(today(value(req.HostData, "date")))
	return strings.Join(parts, "\n\n"), nil
}

// value returns the first value of key in the host data.
func value(data []sdk.KeyValue, key string) string {
	for _, kv := range data {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// instructions keeps the sections of the instruction text that are not
// skipped, cut after maxBytes at a line boundary.
func (p *prompt) instructions(text string) string {
	var kept []string
	for _, sec := range splitSections(text) {
		if s := strings.TrimSpace(sec); s != "" && !p.skipped(s) {
			kept = append(kept, s)
		}
	}
	out := strings.Join(kept, "\n\n")
	if len(out) <= p.cfg.MaxBytes {
		return out
	}
	cut := strings.LastIndexByte(out[:p.cfg.MaxBytes], '\n')
	if cut <= 0 {
		cut = p.cfg.MaxBytes
		for cut > 0 && !utf8Start(out[cut]) {
			cut-- // never split a character
		}
	}
	return strings.TrimSpace(out[:cut]) + fmt.Sprintf("\n\n(%d more bytes of the project's instructions were left out.)", len(out)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// skipped reports whether a section's heading is listed in skipHeadings
// (compared ignoring case).
func (p *prompt) skipped(section string) bool {
	first, _, _ := strings.Cut(section, "\n")
	heading, ok := strings.CutPrefix(first, "## ")
	if !ok {
		return false
	}
	for _, h := range p.cfg.SkipHeadings {
		if strings.EqualFold(h, strings.TrimSpace(heading)) {
			return true
		}
	}
	return false
}

// splitSections splits Markdown before each line that starts with "## ";
// the text before the first heading is a section of its own.
func splitSections(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(line, "## ") && cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(line)
	}
	return append(out, cur.String())
}

// today renders the host's date; a date that does not parse is shown as
// given.
func today(date string) string {
	date = strings.TrimSpace(date)
	if date == "" {
		return ""
	}
	if d, err := time.Parse(time.DateOnly, date); err == nil {
		return "Today is " + d.Format("Monday, 2 January 2006") + "."
	}
	return "Today's date: " + date + "."
}

func init() {
	p := &prompt{}
	sdk.Register(sdk.Plugin{
		Name:    "prompt-plugin",
		Version: "0.1.0",
		Configure: func(raw []byte) (err error) {
			if p.cfg, err = parseConfig(raw); err != nil {
				return fmt.Errorf("prompt-plugin config: %w", err)
			}
			return nil
		},
		SystemPrompt: p,
	})
}

// main is never called: a plugin is a reactor module, set up by init.
func main() {}
