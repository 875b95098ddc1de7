package systemprompt

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// standalone builds the plugin alone into a module of its own: the tests
// run it under the real sandbox (the shipped first-party module, which
// holds all three plugins, runs in the conformance tests and in
// plugins.TestFirstPartyLoad).
const standalone = "./standalone"

// The tests run the built module under the real sandbox; the module is
// built once per source change and compiled once per test binary.

func sections(kv ...string) []abi.Section {
	var out []abi.Section
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, abi.Section{Key: kv[i], Text: kv[i+1]})
	}
	return out
}

func nativeRender(t *testing.T, secs []abi.Section) string {
	a := &host.Assembly{}
	for _, s := range secs {
		a.Sections = append(a.Sections, host.Section{Key: s.Key, Text: s.Text})
	}
	out, err := (&host.SectionPrompt{}).Render(context.Background(), a)
	require.NoError(t, err)
	return out
}

// Without configuration the plugin renders byte for byte what the native
// renderer renders.
// The tables run against the Go module and the C port (modules).
func TestMatchesSectionPrompt(t *testing.T) {
	for _, m := range modules(t) {
		t.Run(m.name, func(t *testing.T) { testMatchesSectionPrompt(t, plugintest.LoadBytes(t, Name, m.wasm)) })
	}
}

func testMatchesSectionPrompt(t *testing.T, p *plugin.Plugin) {
	require.Equal(t, "system-prompt", p.Description().Name)
	require.Equal(t, []abi.Kind{abi.KindSystemPrompt}, p.Description().Kinds)
	cases := map[string][]abi.Section{
		"none":              nil,
		"one":               sections("identity", "You are Weir."),
		"blank dropped":     sections("a", "first", "b", "  \n\t ", "c", "third"),
		"all blank":         sections("a", "", "b", " \n"),
		"trimmed":           sections("a", "\n\n  padded  \n", "b", "\tnext\t"),
		"inner blank lines": sections("a", "line 1\n\nline 2\n", "b", "x"),
		"duplicate keys":    sections("a", "one", "a", "two"),
		"unicode":           sections("a", "héllo wörld ✓", "b", "日本語のテキスト", "c", "\u00a0nbsp\u00a0"),
		"crlf":              sections("a", "windows\r\nline\r\n", "b", "\r\n"),
		"large":             sections("a", strings.Repeat("lorem ipsum ", 20000), "b", "tail"),
	}
	for name, secs := range cases {
		t.Run(name, func(t *testing.T) {
			req := &abi.RenderRequest{Sections: secs, Route: abi.Route{Provider: "deepseek", Model: "deepseek-chat"},
				HostData: []abi.KeyValue{{Key: "date", Value: "2025-05-01"}}}
			got, err := p.RenderPrompt(context.Background(), nil, req)
			require.NoError(t, err)
			require.Equal(t, nativeRender(t, secs), got)
			again, err := p.RenderPrompt(context.Background(), nil, req)
			require.NoError(t, err)
			require.Equal(t, got, again, "deterministic")
		})
	}
}

const testConfig = `{
  "perModel": {
    "deepseek/deepseek-reasoner": [{"key": "style", "text": "Think first."}, {"key": "extra", "text": "Reasoner notes."}],
    "deepseek-reasoner": [{"key": "style", "text": "never used: the provider/model entry wins"}],
    "gpt-4o": [{"key": "tools", "text": ""}, {"key": "style", "text": "Be brief."}]
  },
  "data": ["date", "cwd", "missing", "blank"]
}`

func TestConfiguredRendering(t *testing.T) {
	for _, m := range modules(t) {
		t.Run(m.name, func(t *testing.T) {
			testConfiguredRendering(t, plugintest.LoadBytes(t, Name, m.wasm, plugin.WithConfig([]byte(testConfig))))
		})
	}
}

func testConfiguredRendering(t *testing.T, p *plugin.Plugin) {
	assembly := sections("identity", "You are Weir.", "tools", "Tools: read, write.", "style", "Default style.")
	data := []abi.KeyValue{{Key: "cwd", Value: "/home/me/proj\n"}, {Key: "date", Value: "2025-05-01"},
		{Key: "blank", Value: "  "}, {Key: "date", Value: "ignored second value"}}
	env := "# Environment\ndate: 2025-05-01\ncwd: /home/me/proj"
	cases := []struct {
		name  string
		route abi.Route
		want  string
	}{
		{"provider/model entry", abi.Route{Provider: "deepseek", Model: "deepseek-reasoner"},
			"You are Weir.\n\nTools: read, write.\n\nThink first.\n\nReasoner notes.\n\n" + env},
		{"bare model entry, any provider", abi.Route{Provider: "openai", Model: "gpt-4o"},
			"You are Weir.\n\nBe brief.\n\n" + env},
		{"no entry", abi.Route{Provider: "deepseek", Model: "deepseek-chat"},
			"You are Weir.\n\nTools: read, write.\n\nDefault style.\n\n" + env},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Sections: assembly, Route: tc.route, HostData: data})
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{})
	require.NoError(t, err)
	require.Equal(t, "", got, "no sections and no host data: an empty prompt")
}

func TestConfigErrorsFailTheLoad(t *testing.T) {
	for _, m := range modules(t) {
		t.Run(m.name, func(t *testing.T) { testConfigErrorsFailTheLoad(t, m.wasm) })
	}
}

func testConfigErrorsFailTheLoad(t *testing.T, wasm []byte) {
	cases := map[string]string{
		`{"perModel": {}, "date": ["x"]}`:                   `unknown field "date"`,
		`{"perModel": {"m": [{"key": "a", "txt": ""}]}}`:    `unknown field "txt"`,
		`{"perModel": {"": []}}`:                            `perModel: a route key is empty`,
		`{"perModel": {"m": [{"text": "x"}]}}`:              `perModel["m"][0]: key is empty`,
		`{"perModel": {"m": [{"key": "a"}, {"key": "a"}]}}`: `perModel["m"][1]: section "a" is listed twice`,
		`{"data": ["date", "date"]}`:                        `data[1]: key "date" is listed twice`,
		`{"data": "date"}`:                                  `data must be a JSON array, not a string`,
		`{"data": [1]}`:                                     `data[0] must be a string, not a number`,
		`{"perModel": {"m": [{"key": true}]}}`:              `perModel["m"][0].key must be a string, not a boolean`,
		`{"perModel": {"m": {}}}`:                           `perModel["m"] must be a JSON array, not an object`,
		`{"perModel": {"m": [], "m": []}}`:                  `duplicate object member name "m" within "/perModel"`,
		`{"PerModel": {}}`:                                  `unknown field "PerModel"`,
		`["data"]`:                                          `the configuration must be a JSON object, not an array`,
		`{"data": [}`:                                       `invalid character '}' at start of value within "/data/0"`,
		`{"data": []} {}`:                                   `data after the configuration object`,
	}
	for cfg, want := range cases {
		_, err := plugintest.Runtime(t).Load(context.Background(), "system-prompt", wasm, plugin.WithConfig([]byte(cfg)))
		require.ErrorContains(t, err, want, cfg)
		require.ErrorContains(t, err, "configure: system-prompt config: ", cfg)
	}
}

func TestParseConfig(t *testing.T) {
	cases := map[string]config{
		``:                                 {},
		` null `:                           {},
		`{"perModel": null, "data": null}`: {},
		`{"perModel": {"m": null, "p/m": [{"key": "k", "text": null}, {"text": "t", "key": "j"}]}, "data": ["date"]}`: {
			PerModel: map[string][]section{"m": {}, "p/m": {{Key: "k"}, {Key: "j", Text: "t"}}},
			Data:     []string{"date"},
		},
		"{\"data\": [\"w\\u00e9\\ud83d\\ude00\"]}": {Data: []string{"wé😀"}},
	}
	for raw, want := range cases {
		got, err := parseConfig([]byte(raw))
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
}
