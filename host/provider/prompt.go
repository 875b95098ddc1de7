package provider

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// RulePromptChurn is the rule a prompt plugin breaks when it renders a
// different prompt for the same request.
const RulePromptChurn surface.Rule = "prompt/churn"

// ToolsKey is the host-data key of the tools summary given to prompt
// plugins: one line per offered tool, "name: description" (the first line
// of the description), in the order the tools are offered. A host-data
// entry of the same key takes precedence.
const ToolsKey = "tools"

// SystemPrompt is a prompt plugin as the host's system-prompt provider,
// for one session. It is safe for concurrent use.
type SystemPrompt struct {
	p  *plugin.Plugin
	s  *host.Session
	o  options
	mu sync.Mutex
	br breaker
	c  *cache
	// last is the last prompt the plugin rendered.
	last    string
	hasLast bool
	// lastReq is the encoded request that rendered last, kept when the
	// plugin renders only on change (abi.Description.RenderOnChange).
	lastReq  []byte
	onChange bool
}

var _ host.SystemPromptProvider = (*SystemPrompt)(nil)

// NewSystemPrompt returns the prompt adapter of plugin p for session s. The
// session is read only when the plugin has been disabled, to answer the
// prompt the session already has; it may be nil, and the adapter then
// answers the last prompt it rendered.
func NewSystemPrompt(p *plugin.Plugin, s *host.Session, opts ...Option) (*SystemPrompt, error) {
	if err := checkRole(p, RoleSystemPrompt); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	return &SystemPrompt{p: p, s: s, o: o, br: newBreaker(&o, p.Name(), host.ByPrompt), c: newCache(),
		onChange: p.Description().RenderOnChange}, nil
}

// ID is the plugin's name; the host records it as the source of the
// system messages it commits.
func (sp *SystemPrompt) ID() string { return sp.p.Name() }

// Disabled reports whether the adapter stopped calling the plugin.
func (sp *SystemPrompt) Disabled() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.br.open
}

// Render implements host.SystemPromptProvider: it calls prompt.render with
// the assembly's sections, host data and route. Runtime-context sections
// are not sent: the host projects them as a user message of their own, and
// the prompt must not change when only they do.
func (sp *SystemPrompt) Render(ctx context.Context, a *host.Assembly) (string, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.s != nil {
		sp.br.sync(sp.s.Log().Events(), &sp.o, sp.sessionID())
	}
	if sp.br.open {
		if err := sp.br.takeNotice(); err != nil {
			return "", err
		}
		return sp.current()
	}
	req := RenderRequest(a)
	enc := req.Encode(nil)
	same := sp.hasLast && sp.lastReq != nil && bytes.Equal(enc, sp.lastReq)
	if sp.onChange && same {
		// The plugin promised the same prompt for the same request.
		return sp.last, nil
	}
	h := &Host{kind: abi.KindSystemPrompt, plugin: sp.p.Name(), counters: sp.o.counters, c: sp.c}
	text, err := sp.p.RenderPrompt(ctx, h, req)
	if err != nil {
		sp.lastReq = nil
		return "", sp.br.fail(classify(err), &sp.o, sp.sessionID())
	}
	if same && text != sp.last {
		// Each change replaces node 0 and the provider's prompt cache:
		// the last prompt is kept, and the change counts as a failure
		// (3 within 10 steps disable the plugin for the session).
		return "", sp.br.fail(fmt.Errorf("plugin %q: call %s: %s: the prompt changed though the request did not (a prompt is a function of its request); the last prompt is kept",
			sp.p.Name(), abi.MethodPromptRender, RulePromptChurn), &sp.o, sp.sessionID())
	}
	sp.last, sp.hasLast, sp.lastReq = text, true, enc
	return text, nil
}

func (sp *SystemPrompt) sessionID() string {
	if sp.s == nil {
		return sessionName("")
	}
	return sessionName(sp.s.ID())
}

// current is the prompt the session holds now: the text of the latest
// system message on the surface, so the host's projection changes
// nothing; without a session, the last prompt rendered.
func (sp *SystemPrompt) current() (string, error) {
	if sp.s != nil {
		l := sp.s.Log()
		nodes := l.Nodes()
		for i := len(nodes) - 1; i >= 0; i-- {
			e, ok := l.Event(nodes[i])
			if !ok || e.Type != surface.TypeSystemMessage {
				continue
			}
			if m, ok := l.Message(e.Seq); ok {
				return surface.TextOf(m.Content), nil
			}
		}
		return "", nil
	}
	if sp.hasLast {
		return sp.last, nil
	}
	return "", ErrDisabled
}

// RenderRequest maps an assembly to the prompt.render request: the
// sections in order, the host data sorted by key followed by the tools
// summary (ToolsKey), and the route.
func RenderRequest(a *host.Assembly) *abi.RenderRequest {
	req := &abi.RenderRequest{
		Sections: make([]abi.Section, len(a.Sections)),
		Route:    abi.Route{Provider: a.Route.Provider, Model: a.Route.Model},
	}
	for i, s := range a.Sections {
		req.Sections[i] = abi.Section{Key: s.Key, Text: s.Text}
	}
	for _, k := range slices.Sorted(maps.Keys(a.Data)) {
		req.HostData = append(req.HostData, abi.KeyValue{Key: k, Value: a.Data[k]})
	}
	if _, set := a.Data[ToolsKey]; !set && len(a.Tools) > 0 {
		req.HostData = append(req.HostData, abi.KeyValue{Key: ToolsKey, Value: toolsSummary(a.Tools)})
	}
	return req
}

// toolsSummary lists the tools, one "name: description" line each.
func toolsSummary(tools []jsontext.Value) string {
	var b strings.Builder
	for i, t := range tools {
		var s struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		_ = json.Unmarshal(t, &s) // the host checked the schema is an object
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.Name)
		if d, _, _ := strings.Cut(strings.TrimSpace(s.Description), "\n"); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
	}
	return b.String()
}
