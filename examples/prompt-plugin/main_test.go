package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// The tests run the plugin under the real sandbox; plugintest builds it
// once per source change with sdk/wasmbuild.

const agents = `Read this before changing the code.

## Style
Use tabs.
Keep functions short.

## Release process
Tag, then push.

## Tests
Run go test ./...
`

func render(t *testing.T, p *plugin.Plugin, data ...string) string {
	t.Helper()
	req := &abi.RenderRequest{Sections: []abi.Section{{Key: "base", Text: "You are Weir, a coding agent.\n"}, {Key: "empty", Text: "  "}},
		Route: abi.Route{Provider: "deepseek", Model: "deepseek-chat"}}
	for i := 0; i+1 < len(data); i += 2 {
		req.HostData = append(req.HostData, abi.KeyValue{Key: data[i], Value: data[i+1]})
	}
	got, err := p.RenderPrompt(context.Background(), nil, req)
	require.NoError(t, err)
	return got
}

func TestRender(t *testing.T) {
	p := plugintest.Load(t, ".", plugin.WithConfig([]byte(`{"skipHeadings": ["release PROCESS"]}`)))
	require.Equal(t, []abi.Kind{abi.KindSystemPrompt}, p.Description().Kinds)
	cases := []struct {
		name string
		data []string
		want string
	}{
		{"no data: the host's sections only", nil, "You are Weir, a coding agent."},
		{"date only", []string{"date", "2025-05-01"}, "You are Weir, a coding agent.\n\nToday is Thursday, 1 May 2025."},
		{"unparsable date", []string{"date", "1 May"}, "You are Weir, a coding agent.\n\nToday's date: 1 May."},
		{"instructions, one section skipped", []string{"instructions", agents, "date", "2024-02-29"},
			"You are Weir, a coding agent.\n\n# Project instructions\n\nRead this before changing the code.\n\n" +
				"## Style\nUse tabs.\nKeep functions short.\n\n## Tests\nRun go test ./...\n\nToday is Thursday, 29 February 2024."},
		{"blank instructions", []string{"instructions", "\n \n"}, "You are Weir, a coding agent."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, p, tc.data...)
			require.Equal(t, tc.want, got)
			require.Equal(t, got, render(t, p, tc.data...), "the same inputs render the same bytes")
		})
	}
}

func TestLongInstructionsAreCut(t *testing.T) {
	p := plugintest.Load(t, ".", plugin.WithConfig([]byte(`{"title": "AGENTS.md", "maxBytes": 300}`)))
	long := strings.Repeat("Rule: keep the build green.\n", 40) // 1120 bytes
	got := render(t, p, "instructions", long)
	head, note, ok := strings.Cut(got, "\n\n(")
	require.True(t, ok, got)
	require.True(t, strings.HasPrefix(head, "You are Weir, a coding agent.\n\n# AGENTS.md\n\nRule: keep"))
	require.True(t, strings.HasSuffix(head, "Rule: keep the build green."), "cut at a line boundary")
	kept := strings.Count(head, "Rule:")
	require.Equal(t, 10, kept, "300 bytes hold 10 whole rules")
	require.Equal(t, "840 more bytes of the project's instructions were left out.)", note)

	// A single line longer than the limit is cut inside it, never inside a
	// character.
	got = render(t, p, "instructions", strings.Repeat("é", 400))
	require.Contains(t, got, "\n\n# AGENTS.md\n\n"+strings.Repeat("é", 150)+"\n\n(500 more bytes")
}

func TestConfigErrors(t *testing.T) {
	wasm := plugintest.Build(t, ".")
	for cfg, want := range map[string]string{
		`{"title": " "}`:      "title must not be blank",
		`{"maxBytes": 10}`:    "maxBytes must be at least 256, got 10",
		`{"skip": ["x"]}`:     `json: unknown field "skip"`,
		`{"title": "a"} null`: "data after the configuration object",
	} {
		_, err := plugintest.Runtime(t).Load(context.Background(), "prompt-plugin", wasm, plugin.WithConfig([]byte(cfg)))
		require.ErrorContains(t, err, "configure: prompt-plugin config: "+want, cfg)
	}
}
