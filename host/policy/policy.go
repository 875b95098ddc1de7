// Package policy decides whether a tool call may run: the permission policy
// of every tool, built-in, an embedder's or an MCP server's.
//
// # Rules
//
// Each call gets one of three rules: [Allow] runs it, [Deny] answers it
// with an error result the model sees (code TOOL_DENIED) and [Ask] asks
// someone first, an [AskFunc]: weir run asks on the terminal, an embedder
// gives its own, and where there is no one to ask the call is denied
// with a reason that says so and how to allow it.
//
// The rule of a tool is, in order:
//
//  1. the configured rule of its exact name (tools.policy.NAME);
//  2. the configured rule of the longest pattern PREFIX* that matches it
//     (tools.policy."github__*": one server's tools; "*": every tool);
//  3. the default: a tool that says it only reads (a [ReadOnly] whose
//     IsReadOnly is true: the built-in file tools, an MCP tool with the
//     readOnlyHint annotation) is allowed; one that says it does more (an
//     MCP tool without that hint) is asked; a tool that says nothing (an
//     embedder's Go tool, which the embedder chose to offer and gates
//     with its own interceptors) is allowed.
//
// Every refusal names the rule that decided it, and the host log records
// it with the tool's name.
package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

// Rule is what the policy does with a call.
type Rule string

// The rules.
const (
	Allow Rule = "allow"
	Deny  Rule = "deny"
	Ask   Rule = "ask"
)

// Rules are the rule names, for configuration checks.
var Rules = []string{string(Allow), string(Deny), string(Ask)}

// CodeDenied is the code of a denied call's error result.
const CodeDenied = "TOOL_DENIED"

// ReadOnly is implemented by a tool that says whether it only reads.
type ReadOnly interface {
	IsReadOnly() bool
}

// Policy is a set of configured rules (tools.policy): keys are tool names
// or patterns PREFIX*.
type Policy map[string]Rule

// Decision is the rule of one tool and what decided it.
type Decision struct {
	Rule Rule
	// By names what decided: the configuration key (tools.policy.NAME)
	// or the default that applied.
	By string
}

// Decide returns the rule of t.
func (p Policy) Decide(t host.Tool) Decision {
	name := t.Name()
	if r, ok := p[name]; ok {
		return Decision{r, "tools.policy." + name}
	}
	best := ""
	found := false
	for k := range p {
		if pre, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, pre) && (!found || len(k) > len(best)) {
			best, found = k, true
		}
	}
	if found {
		return Decision{p[best], fmt.Sprintf("tools.policy.%q", best)}
	}
	ro, ok := t.(ReadOnly)
	switch {
	case !ok:
		return Decision{Allow, "the default for a tool the host or the embedder provides"}
	case ro.IsReadOnly():
		return Decision{Allow, "the default for a read-only tool"}
	}
	return Decision{Ask, "the default for a tool that may write or run"}
}

// Keys are the configured keys, sorted.
func (p Policy) Keys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AskFunc asks whether call, which d says to ask about, may run. It
// returns false to deny it; an error denies it too, with the error's text
// as the reason. ctx ends with the call's timeout.
type AskFunc func(ctx context.Context, call host.ToolCall, d Decision) (bool, error)

// Interceptor enforces p on every call (host.Config.ToolInterceptors; put
// it first, outermost). lookup finds the offered tool of a call's name;
// ask answers the Ask rule, and nil denies those calls (no one to ask). A
// name lookup does not know is decided as a tool that may write.
// log records each refusal.
func Interceptor(p Policy, lookup func(name string) (host.Tool, bool), ask AskFunc, log hclog.Logger) host.ToolInterceptor {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return func(ctx context.Context, call host.ToolCall, next host.ToolRun) ([]surface.Block, error) {
		t, ok := lookup(call.Name)
		if !ok {
			// A tool the lookup does not know (the list changed under the
			// call) is decided as one that may write: never let through.
			t = unknown(call.Name)
		}
		d := p.Decide(t)
		refuse := func(reason string) ([]surface.Block, error) {
			log.Warn("tool call denied", "tool", call.Name, "call", call.ID, "rule", d.Rule, "by", d.By, "reason", reason)
			return nil, &host.ToolRefusal{Code: CodeDenied, Reason: reason}
		}
		switch d.Rule {
		case Allow:
			return next(ctx, call)
		case Deny:
			return refuse(fmt.Sprintf("the call of %s was denied by the permission policy (%s: deny)", call.Name, d.By))
		}
		if ask == nil {
			return refuse(fmt.Sprintf("the call of %s needs confirmation (%s: ask) and no one can answer here (not a terminal); "+
				"set tools.policy.%s: allow to allow it", call.Name, d.By, call.Name))
		}
		yes, err := ask(ctx, call, d)
		switch {
		case err != nil:
			return refuse(fmt.Sprintf("the call of %s needs confirmation (%s: ask), which failed: %v", call.Name, d.By, err))
		case !yes:
			return refuse(fmt.Sprintf("the call of %s was refused by the user (%s: ask)", call.Name, d.By))
		}
		return next(ctx, call)
	}
}

// unknown is a tool known by its name only; it says it may do more than
// read.
type unknown string

func (u unknown) Name() string                                         { return string(u) }
func (u unknown) Schema() jsontext.Value                               { return nil }
func (u unknown) IsReadOnly() bool                                     { return false }
func (u unknown) Run(context.Context, string) ([]surface.Block, error) { return nil, nil }
