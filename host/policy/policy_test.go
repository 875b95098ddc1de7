package policy_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/builtin"
	"github.com/weirhost/weir/host/policy"
	"github.com/weirhost/weir/surface"
)

// declared is a tool that says whether it only reads.
type declared struct {
	host.FuncTool
	ro bool
}

func (d *declared) IsReadOnly() bool { return d.ro }

func tool(name string) *host.FuncTool {
	return &host.FuncTool{ToolName: name, Fn: func(context.Context, string) (string, error) { return "ran", nil }}
}

func TestDecide(t *testing.T) {
	p := policy.Policy{"gh__delete": policy.Deny, "gh__*": policy.Allow, "*": policy.Ask, "fs__write": policy.Allow}
	none := policy.Policy{}
	for _, tc := range []struct {
		p    policy.Policy
		tool host.Tool
		rule policy.Rule
		by   string
	}{
		{p, tool("gh__delete"), policy.Deny, "tools.policy.gh__delete"},
		{p, tool("gh__list"), policy.Allow, `tools.policy."gh__*"`},
		{p, tool("other"), policy.Ask, `tools.policy."*"`},
		{p, &declared{*tool("fs__write"), false}, policy.Allow, "tools.policy.fs__write"},
		{none, &declared{*tool("fs__read"), true}, policy.Allow, "the default for a read-only tool"},
		{none, &declared{*tool("fs__write"), false}, policy.Ask, "the default for a tool that may write or run"},
		{none, tool("shout"), policy.Allow, "the default for a tool the host or the embedder provides"},
	} {
		d := tc.p.Decide(tc.tool)
		assert.Equal(t, policy.Decision{Rule: tc.rule, By: tc.by}, d, tc.tool.Name())
	}
}

func TestInterceptor(t *testing.T) {
	tools := map[string]host.Tool{"r": &declared{*tool("r"), true}, "w": &declared{*tool("w"), false}, "d": tool("d")}
	lookup := func(n string) (host.Tool, bool) { t, ok := tools[n]; return t, ok }
	p := policy.Policy{"d": policy.Deny}
	next := func(ctx context.Context, c host.ToolCall) ([]surface.Block, error) {
		return []surface.Block{surface.Text("ran " + c.Name)}, nil
	}
	yes := func(context.Context, host.ToolCall, policy.Decision) (bool, error) { return true, nil }
	no := func(context.Context, host.ToolCall, policy.Decision) (bool, error) { return false, nil }
	broken := func(context.Context, host.ToolCall, policy.Decision) (bool, error) {
		return false, errors.New("the terminal closed")
	}
	for _, tc := range []struct {
		name, tool string
		ask        policy.AskFunc
		want       string // "" when denied
		reason     string
	}{
		{"read-only allowed", "r", nil, "ran r", ""},
		{"configured deny", "d", yes, "", "the call of d was denied by the permission policy (tools.policy.d: deny)"},
		{"ask answered yes", "w", yes, "ran w", ""},
		{"ask answered no", "w", no, "", "the call of w was refused by the user (the default for a tool that may write or run: ask)"},
		{"ask failed", "w", broken, "", "the call of w needs confirmation (the default for a tool that may write or run: ask), which failed: the terminal closed"},
		{"no one to ask", "w", nil, "", "the call of w needs confirmation (the default for a tool that may write or run: ask) and no one can answer here (not a terminal); set tools.policy.w: allow to allow it"},
		{"unknown to the lookup", "gone", nil, "", "the call of gone needs confirmation (the default for a tool that may write or run: ask) and no one can answer here (not a terminal); set tools.policy.gone: allow to allow it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			ic := policy.Interceptor(p, lookup, tc.ask, hclog.New(&hclog.LoggerOptions{Output: &log}))
			out, err := ic(context.Background(), host.ToolCall{ID: "c1", Name: tc.tool}, next)
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, surface.TextOf(out))
				return
			}
			var r *host.ToolRefusal
			require.ErrorAs(t, err, &r)
			assert.Equal(t, policy.CodeDenied, r.Code)
			assert.Equal(t, tc.reason, r.Reason)
			assert.Contains(t, log.String(), "tool call denied")
			assert.Contains(t, log.String(), "tool="+tc.tool)
		})
	}
}

func TestBuiltinToolsAreReadOnly(t *testing.T) {
	for _, tl := range builtin.Tools(t.TempDir(), nil) {
		assert.Equal(t, policy.Decision{Rule: policy.Allow, By: "the default for a read-only tool"}, policy.Policy{}.Decide(tl), tl.Name())
	}
}
