package eval_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/eval/evaltest"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/host/snapshot"
	"github.com/weirhost/weir/sdk/wasmbuild"
	"github.com/weirhost/weir/surface"
)

var update = flag.Bool("update", false, "rewrite the pinned snapshots of the example plugins")

// examplePlugin builds an example plugin (cached by content hash) and
// loads it.
func examplePlugin(t *testing.T, rt *plugin.Runtime, dir, name string, role provider.Role, conf string) *provider.Plugin {
	t.Helper()
	ctx := context.Background()
	paths, err := (&wasmbuild.Cache{}).Build(ctx, dir)
	require.NoError(t, err)
	wasm, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	p, err := provider.Load(ctx, rt, provider.Spec{Name: name, Role: role, Wasm: wasm, Config: []byte(conf)})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// TestPinnedExampleSnapshots pins what the model sees with each example
// plugin, as examples/sessions/snapshots/demo pins the demo: a change to
// the fold, the loop or a plugin that changes a wire request fails here
// with its diff. Rewrite with -update when the change is intended.
//
//   - pruner: the demo session replayed with examples/pruner as its only
//     compaction plugin (small thresholds, so it acts on the demo);
//   - prompt-plugin: a session the offline model records with
//     examples/prompt-plugin rendering the system prompt.
func TestPinnedExampleSnapshots(t *testing.T) {
	rt := runtime(t)
	tests := []struct {
		name   string
		events func(t *testing.T) []surface.Event
	}{
		{"pruner", func(t *testing.T) []surface.Event {
			id, events := loadEvents(t, demo)
			rec, err := eval.Record(id, events)
			require.NoError(t, err)
			pr := examplePlugin(t, rt, "../../examples/pruner", "pruner", provider.RoleCompaction,
				`{"minBytes": 150, "keepRecent": 1, "triggerRatio": 0.03}`)
			meter := evaltest.FirstParty(t, rt, "meter", rec.Route, `{}`)
			set := eval.Set{Name: "pruner", Providers: func(s *host.Session) ([]host.CompactionProvider, host.Meter, error) {
				_, m, err := meter.Providers(s)
				if err != nil {
					return nil, nil, err
				}
				c, err := pr.Compaction()
				return []host.CompactionProvider{c}, m, err
			}}
			res, err := eval.Replay(context.Background(), rec, set, eval.Options{KeepEvents: true})
			require.NoError(t, err)
			require.Positive(t, res.Totals.Compactions, "the pruner did not act on the demo")
			return res.Events
		}},
		{"prompt-plugin", func(t *testing.T) []surface.Event {
			pp := examplePlugin(t, rt, "../../examples/prompt-plugin", "prompt-plugin", provider.RoleSystemPrompt,
				`{"title": "Project instructions"}`)
			var prompt host.SystemPromptProvider
			data := map[string]string{"instructions": "## Style\nUse tabs.\n\n## Tests\nTable-driven.", "date": "2026-01-01"}
			_, events := evaltest.SessionWith(t, rt, 6, func(s *host.Session) host.SystemPromptProvider {
				sp, err := pp.SystemPrompt(s)
				require.NoError(t, err)
				prompt = sp
				return sp
			}, data)
			require.NotNil(t, prompt)
			return events
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := snapshot.Build(tt.events(t))
			require.NoError(t, err)
			dir := "../../examples/sessions/snapshots/" + tt.name
			if *update {
				require.NoError(t, snap.Write(dir))
				return
			}
			if err := snap.Check(dir); err != nil {
				t.Fatalf("%v\nif the change is intended: go test ./host/eval -run TestPinnedExampleSnapshots -update", err)
			}
		})
	}
}
