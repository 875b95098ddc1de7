// Package systemprompt is Weir's first-party system-prompt plugin. Weir
// ships it in its first-party module (plugins/firstparty), and
// ./standalone builds it alone into a module of its own. It is also the
// smallest complete plugin, the one to read first when writing your own.
//
// The host assembles the prompt as keyed sections and sends them, with the
// route the prompt is for and some host data (date, working directory, ...),
// in a prompt.render call. With no configuration the plugin renders exactly
// what the host's native renderer (host.SectionPrompt) renders: the
// sections whose text is not blank, trimmed, in order, separated by a blank
// line. The same inputs always give the same bytes, so an unchanged prompt
// never rewrites the session's system message.
//
// # Configuration
//
// The configuration is a JSON object; keys match exactly, and an unknown or
// repeated key fails the load:
//
//	{
//	  "perModel": {
//	    "deepseek/deepseek-reasoner": [{"key": "style", "text": "Think before you answer."}],
//	    "gpt-4o": [{"key": "tools", "text": ""}]
//	  },
//	  "data": ["date", "workdir"]
//	}
//
// perModel maps "provider/model" or a bare "model" to sections for that
// route; the provider/model entry wins over the bare model entry, and only
// one entry applies. A configured section whose key names a section of the
// assembly replaces its text in place (an empty text removes it); the others
// are added after the assembly, in the order given.
//
// data lists host data keys to show in a final section, in the order given:
//
//	# Environment
//	date: 2025-05-01
//	workdir: project
//
// Keys the host did not send, or sent blank, are left out; with none left
// there is no Environment section.
package systemprompt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/sdk"
)

// config is the plugin configuration; see the package comment.
type config struct {
	PerModel map[string][]section // "perModel"
	Data     []string             // "data"
}

type section struct {
	Key  string // "key"
	Text string // "text"
}

// parseConfig reads and checks the configuration. Empty or null means
// defaults. Keys are matched exactly; a key given twice fails.
func parseConfig(raw []byte) (config, error) {
	var c config
	if len(bytes.TrimSpace(raw)) == 0 {
		return c, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if err := readConfig(dec, &c); err != nil {
		return c, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return c, errors.New("data after the configuration object")
	}
	for _, route := range slices.Sorted(maps.Keys(c.PerModel)) { // sorted: the same error every time
		secs := c.PerModel[route]
		if route == "" {
			return c, errors.New(`perModel: a route key is empty; use "provider/model" or "model"`)
		}
		seen := map[string]bool{}
		for i, s := range secs {
			if s.Key == "" {
				return c, fmt.Errorf("perModel[%q][%d]: key is empty", route, i)
			}
			if seen[s.Key] {
				return c, fmt.Errorf("perModel[%q][%d]: section %q is listed twice", route, i, s.Key)
			}
			seen[s.Key] = true
		}
	}
	seen := map[string]bool{}
	for i, k := range c.Data {
		if k == "" {
			return c, fmt.Errorf("data[%d]: key is empty", i)
		}
		if seen[k] {
			return c, fmt.Errorf("data[%d]: key %q is listed twice", i, k)
		}
		seen[k] = true
	}
	return c, nil
}

// render builds the prompt. It is a pure function of its inputs.
func render(c *config, req *sdk.RenderRequest) string {
	var parts []string
	for _, s := range withOverrides(req.Sections, c.sectionsFor(req.Route)) {
		if t := strings.TrimSpace(s.Text); t != "" {
			parts = append(parts, t)
		}
	}
	if env := environment(c.Data, req.HostData); env != "" {
		parts = append(parts, env)
	}
	return strings.Join(parts, "\n\n")
}

// sectionsFor returns the configured sections of a route: the
// provider/model entry, else the bare model entry, else none.
func (c *config) sectionsFor(r sdk.Route) []section {
	if s, ok := c.PerModel[r.Provider+"/"+r.Model]; ok {
		return s
	}
	return c.PerModel[r.Model]
}

// withOverrides applies configured sections to the assembly: same key,
// text replaced in place; new key, added at the end.
func withOverrides(assembly []sdk.Section, extra []section) []sdk.Section {
	if len(extra) == 0 {
		return assembly
	}
	out := append([]sdk.Section(nil), assembly...)
	for _, e := range extra {
		replaced := false
		for i := range out {
			if out[i].Key == e.Key {
				out[i].Text, replaced = e.Text, true
			}
		}
		if !replaced {
			out = append(out, sdk.Section{Key: e.Key, Text: e.Text})
		}
	}
	return out
}

// environment renders the wanted host data as "key: value" lines under a
// heading; "" when none of the keys has a value. The first value of a key
// counts.
func environment(keys []string, data []sdk.KeyValue) string {
	var b strings.Builder
	for _, k := range keys {
		for _, kv := range data {
			if kv.Key != k {
				continue
			}
			if v := strings.TrimSpace(kv.Value); v != "" {
				if b.Len() == 0 {
					b.WriteString("# Environment")
				}
				b.WriteString("\n" + k + ": " + v)
			}
			break
		}
	}
	return b.String()
}

// prompt is the provider. Its configuration is the same for every
// instance; it keeps no session state.
type prompt struct{ cfg config }

func (p *prompt) RenderPrompt(_ *sdk.Host, req *sdk.RenderRequest) (string, error) {
	return render(&p.cfg, req), nil
}

// Name is the plugin's name.
const Name = "system-prompt"

// Plugin is the plugin to register (sdk.Register).
func Plugin() sdk.Plugin {
	p := &prompt{}
	return sdk.Plugin{
		Name:    Name,
		Version: "1.0.0",
		Configure: func(raw []byte) (err error) {
			if p.cfg, err = parseConfig(raw); err != nil {
				return fmt.Errorf("system-prompt config: %w", err)
			}
			return nil
		},
		SystemPrompt: p,
		// render is a pure function of the request and the configuration.
		RenderOnChange: true,
	}
}
