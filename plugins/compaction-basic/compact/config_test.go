package compact

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestI84_DefaultConfig(t *testing.T) {
	for _, doc := range []string{"", "  ", "null", "{}"} {
		cfg, err := ParseConfig([]byte(doc))
		require.NoError(t, err, "config %q", doc)
		p := cfg.Policy
		require.Equal(t, 0.8, p.ThresholdRatio)
		require.Equal(t, 0.16, p.RetainRatio)
		require.False(t, p.HasRetainTokens)
		require.Equal(t, int64(65536), p.HeadroomTokens)
		require.Equal(t, int64(65536), p.MaxTokens)
		require.Equal(t, 1, p.CompactionRetries)
		require.Equal(t, 1, p.MaxOverflowRetries)
		require.Equal(t, "", p.SummarizationProvider)
		require.Equal(t, "", p.SummarizationModel)
		require.True(t, cfg.Auto)
		require.Empty(t, cfg.Policies)
		require.Equal(t, 3, cfg.MaxCompactionsPerWindow)
		require.Equal(t, 1, cfg.WindowTurns)
		require.Equal(t, p, cfg.For("any", "model"))
	}
}

func TestI84_MaxTokensFollowsHeadroom(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"headroomTokens": 1000, "modelPolicies": [
		{"provider": "a", "model": "x", "headroomTokens": 500},
		{"provider": "a", "model": "y", "maxTokens": 42}]}`))
	require.NoError(t, err)
	require.Equal(t, int64(1000), cfg.Policy.MaxTokens)
	require.Equal(t, int64(500), cfg.For("a", "x").MaxTokens, "an override of headroomTokens moves the defaulted cap")
	require.Equal(t, int64(42), cfg.For("a", "y").MaxTokens)
	require.Equal(t, int64(1000), cfg.For("a", "y").HeadroomTokens)
}

func TestI85_ConfigRejected(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown key", `{"thresholdRatio": 0.5, "bogus": 1}`, `key "bogus" is an unknown key`},
		{"unknown key in policy", `{"modelPolicies": [{"provider": "p", "model": "m", "retain": 1}]}`, `modelPolicies[0] (p/m): key "retain" is an unknown key`},
		{"both retention forms", `{"retainRatio": 0.1, "retainTokens": 100}`, "exclusive"},
		{"both retention forms in policy", `{"modelPolicies": [{"provider": "p", "model": "m", "retainRatio": 0.1, "retainTokens": 5}]}`, "exclusive"},
		{"retainRatio equals threshold", `{"thresholdRatio": 0.5, "retainRatio": 0.5}`, "must be less than thresholdRatio"},
		{"retainRatio above threshold", `{"thresholdRatio": 0.1}`, "0.16 must be less than thresholdRatio 0.1"},
		{"policy threshold below inherited ratio", `{"modelPolicies": [{"provider": "p", "model": "m", "thresholdRatio": 0.15}]}`, "must be less than thresholdRatio"},
		{"half pair provider", `{"summarizationProvider": "p"}`, "set together"},
		{"half pair model", `{"summarizationModel": "m"}`, "set together"},
		{"pair one empty", `{"summarizationProvider": "p", "summarizationModel": ""}`, "set together"},
		{"half pair in policy", `{"summarizationProvider": "p", "summarizationModel": "m", "modelPolicies": [{"provider": "a", "model": "b", "summarizationModel": "x"}]}`, "set together"},
		{"duplicate policy", `{"modelPolicies": [{"provider": "p", "model": "m"}, {"provider": "p", "model": "m", "maxTokens": 5}]}`, "modelPolicies[1] (p/m) duplicates modelPolicies[0]"},
		{"policy without model", `{"modelPolicies": [{"provider": "p"}]}`, "needs a non-empty provider and model"},
		{"policy not an object", `{"modelPolicies": [1]}`, "must be an object"},
		{"policies not an array", `{"modelPolicies": {}}`, "must be an array"},
		{"top-level key in policy", `{"modelPolicies": [{"provider": "p", "model": "m", "auto": false}]}`, `key "auto" is a top-level key`},
		{"threshold zero", `{"thresholdRatio": 0}`, "(0,1]"},
		{"threshold above one", `{"thresholdRatio": 1.5}`, "(0,1]"},
		{"threshold string", `{"thresholdRatio": "0.5"}`, "must be a number"},
		{"headroom negative", `{"headroomTokens": -1}`, ">= 0"},
		{"headroom fraction", `{"headroomTokens": 1.5}`, "must be an integer"},
		{"maxTokens zero", `{"maxTokens": 0}`, ">= 1"},
		{"retries negative", `{"compactionRetries": -2}`, ">= 0"},
		{"overflow negative", `{"maxOverflowRetries": -1}`, ">= 0"},
		{"auto not bool", `{"auto": "yes"}`, "true or false"},
		{"window zero", `{"windowTurns": 0}`, ">= 1"},
		{"per window negative", `{"maxCompactionsPerWindow": -1}`, ">= 0"},
		{"duplicate key", `{"auto": true, "auto": false}`, `"auto" appears twice`},
		{"not an object", `[1]`, "must be a JSON object"},
		{"trailing data", `{} {}`, "trailing data"},
		{"bad json", `{"auto": }`, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.doc))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestI85_OverridesMergeFieldWise(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"thresholdRatio": 0.7, "retainTokens": 1000, "compactionRetries": 2,
		"summarizationProvider": "s", "summarizationModel": "sm", "auto": false,
		"maxCompactionsPerWindow": 0, "windowTurns": 4,
		"modelPolicies": [
			{"provider": "p", "model": "a", "retainRatio": 0.2},
			{"provider": "p", "model": "b", "thresholdRatio": 0.9, "summarizationProvider": "", "summarizationModel": ""}]}`))
	require.NoError(t, err)
	require.False(t, cfg.Auto)
	require.Equal(t, 0, cfg.MaxCompactionsPerWindow)
	require.Equal(t, 4, cfg.WindowTurns)
	a := cfg.For("p", "a")
	require.False(t, a.HasRetainTokens, "a retention form in an override replaces the inherited one")
	require.Equal(t, 0.2, a.RetainRatio)
	require.Equal(t, 0.7, a.ThresholdRatio)
	require.Equal(t, 2, a.CompactionRetries)
	require.Equal(t, "s", a.SummarizationProvider)
	b := cfg.For("p", "b")
	require.True(t, b.HasRetainTokens)
	require.Equal(t, int64(1000), b.RetainTokens)
	require.Equal(t, 0.9, b.ThresholdRatio)
	require.Equal(t, "", b.SummarizationProvider)
	require.Equal(t, cfg.Policy, cfg.For("p", "c"), "no exact match: the top-level policy")
}

func TestI86_ResolveSpec(t *testing.T) {
	p := defaultPolicy()
	p.HeadroomTokens = 100
	p.RetainRatio = 0.1
	for _, tc := range []struct {
		ratio           float64
		reserved, head  int64
		threshold, keep int64
	}{
		{0.8, 0, 100, 800, 100},  // min(800, 900)
		{0.8, 300, 100, 600, 70}, // min(800, 600)
		{0.5, 100, 0, 500, 90},   // min(500, 900)
		{1, 0, 0, 1000, 100},     // whole window
		{0.333, 0, 0, 333, 100},  // floor(333)
		{0.9, 50, 60, 890, 95},   // min(900, 890)
		{0.8, 199, 600, 201, 80}, // pressure budget wins
		{0.8, 0, 999, 1, 100},    // retain >= threshold: error below
		{0.8, 999, 0, 1, 0},      // message budget 1
		{0.8, 1, 998, 1, 99},     // retain 99 >= threshold 1: error
		{0.25, 0, 0, 250, 100},   // floor(250)
	} {
		p.ThresholdRatio, p.HeadroomTokens = tc.ratio, tc.head
		s, err := ResolveSpec(p, "prov", "mod", 1000, tc.reserved)
		if tc.keep >= tc.threshold {
			require.Error(t, err)
			require.Contains(t, err.Error(), "is not below the threshold")
			continue
		}
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, tc.threshold, s.ThresholdTokens, "%+v", tc)
		require.Equal(t, tc.keep, s.RetainTokens, "%+v", tc)
		require.Equal(t, 1000-tc.reserved, s.MessageBudget)
		require.Equal(t, 1000-tc.reserved-tc.head, s.PressureBudget)
	}
	p = defaultPolicy()
	p.HeadroomTokens = 100
	for _, tc := range []struct {
		window, reserved int64
		want             string
	}{
		{0, 0, "no context window"},
		{-5, 0, "no context window"},
		{1000, 1000, "no message budget"},
		{1000, 2000, "no message budget"},
		{1000, 900, "no pressure budget"},
	} {
		_, err := ResolveSpec(p, "prov", "mod", tc.window, tc.reserved)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", tc, err)
		require.Contains(t, err.Error(), tc.want)
		require.Contains(t, err.Error(), "prov/mod")
	}
	// An absolute retention must stay below the threshold too.
	p = defaultPolicy()
	p.HeadroomTokens, p.HasRetainTokens, p.RetainTokens = 0, true, 800
	_, err := ResolveSpec(p, "prov", "mod", 1000, 0)
	require.ErrorContains(t, err, "retained tail 800 tokens is not below the threshold 800")
	p.RetainTokens = 0
	s, err := ResolveSpec(p, "prov", "mod", 1000, 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), s.RetainTokens)
}

// Pressure reads reserved from the latest header's maxTokens, else the
// route's; a target's configuration error is reported once per
// provider/model and then stays silent.
func TestI86_PressureSpecSourcesAndWarnOnce(t *testing.T) {
	b := newBuilder(t).open()
	b.header("p", "m", 600)
	b.sys("prompt")
	b.user(words(100))
	s := b.session()
	cfg, err := ParseConfig([]byte(`{"headroomTokens": 100, "retainTokens": 10}`))
	require.NoError(t, err)
	st := &State{}
	req := Request{Reason: Pressure, Turn: 1, Route: Route{Provider: "p", Model: "m", ContextWindow: 1000, MaxTokens: 1}}
	// 1000 - 600 (header) - 100 = 300 > 0: no error, below threshold.
	out, err := Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Nil(t, out.Warning)
	require.Empty(t, out.Proposals)
	// The header reserves everything: a config error, once.
	req.Route.ContextWindow = 650
	out, err = Compact(s, cfg, req, st)
	require.NoError(t, err)
	var ce *ConfigError
	require.ErrorAs(t, out.Warning, &ce)
	require.Equal(t, "p", ce.Provider)
	require.Contains(t, ce.Error(), "no pressure budget")
	out, err = Compact(s, cfg, req, st)
	require.NoError(t, err)
	require.Nil(t, out.Warning, "warned once per provider/model")
	require.Equal(t, []string{"p/m"}, st.Warned)
	// No window at all is also a config error, but already warned for p/m.
	req.Route.ContextWindow = 0
	out, _ = Compact(s, cfg, req, st)
	require.Nil(t, out.Warning)
	require.Empty(t, s.calls, "no summarization on config errors")
}
