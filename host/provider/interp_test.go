package provider_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	tmnative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// TestInterpreterFirstSameLog: a session whose three first-party plugins
// start on wazero's interpreter (an empty compilation cache and
// plugin.WithInterpreterFirst) and move to their compiled modules halfway
// writes the same log, byte for byte, as the same session on compiled
// modules, compactions included.
func TestInterpreterFirstSameLog(t *testing.T) {
	ctx := context.Background()
	var meterStats plugin.Stats
	run := func(rt *plugin.Runtime, between func()) string {
		load := func(name string, role provider.Role, config string) *provider.Plugin {
			// Deadlines a loaded machine meets: an interpreter start that
			// timed out would wait for the compiled module instead, and the
			// meter would never run on the interpreter.
			limits := provider.Limits{Start: 5 * time.Minute, Call: 5 * time.Minute}
			p, err := provider.Load(ctx, rt, provider.Spec{Name: name, Role: role, Wasm: plugins.FirstParty[name], Config: []byte(config), Limits: limits},
				provider.WithTokenizers(tmnative.Counters()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close(ctx) })
			return p
		}
		pp := load(plugins.SystemPrompt, provider.RoleSystemPrompt, "")
		cp := load(plugins.CompactionBasic, provider.RoleCompaction,
			`{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "maxTokens": 200}`)
		mp := load(plugins.TokenMeter, provider.RoleTokenMeter, "")
		l := newLoop(t, func(s *host.Session, cfg *host.Config) {
			prompt, err := pp.SystemPrompt(s)
			require.NoError(t, err)
			comp, err := cp.Compaction()
			require.NoError(t, err)
			meter, err := mp.Meter(s)
			require.NoError(t, err)
			cfg.Prompt, cfg.Meter, cfg.Compactors = prompt, meter, []host.CompactionProvider{comp}
			cfg.Route.ContextWindow = 1000
			cfg.Sections = []host.Section{{Key: "p", Text: "You are helpful."}}
			cfg.Tools = []host.Tool{echoTool}
		})
		body := strings.Repeat("word ", 150)
		for i := range 6 {
			if i == 3 {
				between()
			}
			l.turn(body + strconv.Itoa(i))
		}
		require.Empty(t, l.failures())
		require.NotEmpty(t, l.events(surface.TypeCompactionEnd), "the session compacted")
		meterStats = mp.Stats()
		return l.logText()
	}
	compiled := run(plugintest.Runtime(t), func() {})

	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(t.TempDir()), plugin.WithInterpreterFirst(true))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	interp := run(rt, func() { require.NoError(t, rt.WaitCompiled(ctx)) })
	require.Equal(t, compiled, interp)
	require.GreaterOrEqual(t, meterStats.Started, uint64(2), "the meter ran on the interpreter, then on the compiled module")
}
