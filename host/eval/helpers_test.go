package eval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

const demo = "../../examples/sessions/demo.jsonl"

// runtime is one plugin runtime per test.
func runtime(t *testing.T) *plugin.Runtime {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { rt.Close(ctx) })
	return rt
}

// firstParty is a set of the first-party compaction-basic (with conf) and
// token-meter (pricing route provider/model with the heuristic).
func firstParty(t *testing.T, rt *plugin.Runtime, name string, route host.Route, conf string) eval.Set {
	t.Helper()
	ctx := context.Background()
	load := func(pn string, role provider.Role, c string) *provider.Plugin {
		p, err := provider.Load(ctx, rt, provider.Spec{Name: pn, Role: role, Wasm: plugins.FirstParty[pn], Config: []byte(c)})
		require.NoError(t, err)
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}
	cb := load("compaction-basic", provider.RoleCompaction, conf)
	tm := load("token-meter", provider.RoleTokenMeter, fmt.Sprintf(`{"routes":{%q:"heuristic"}}`, route.Provider+"/"+route.Model))
	return eval.Set{Name: name, Providers: func(s *host.Session) ([]host.CompactionProvider, host.Meter, error) {
		c, err := cb.Compaction()
		if err != nil {
			return nil, nil, err
		}
		m, err := tm.Meter(s)
		if err != nil {
			return nil, nil, err
		}
		return []host.CompactionProvider{c}, m, nil
	}}
}

func loadEvents(t *testing.T, path string) (string, []surface.Event) {
	t.Helper()
	ld, err := jsonl.Load(path)
	require.NoError(t, err)
	return ld.Header.ID, ld.Log.Events()
}
