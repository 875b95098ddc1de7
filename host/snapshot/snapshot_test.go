package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/snapshot"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

var update = flag.Bool("update", false, "rewrite the pinned snapshots of the shipped sessions")

const demo = "../../examples/sessions/demo.jsonl"

// pinned are the shipped sessions whose snapshots CI checks: a change to
// the fold, the loop or a first-party plugin that changes a wire request
// fails here and shows its diff.
var pinned = []struct{ session, dir string }{
	{demo, "../../examples/sessions/snapshots/demo"},
}

func TestPinnedSnapshots(t *testing.T) {
	for _, p := range pinned {
		t.Run(filepath.Base(p.dir), func(t *testing.T) {
			snap := build(t, load(t, p.session))
			if *update {
				require.NoError(t, snap.Write(p.dir))
				return
			}
			if err := snap.Check(p.dir); err != nil {
				t.Fatalf("%v\nif the change is intended: go test ./host/snapshot -run TestPinnedSnapshots -update", err)
			}
		})
	}
}

func load(t *testing.T, path string) []surface.Event {
	t.Helper()
	ld, err := jsonl.Load(path)
	require.NoError(t, err)
	return ld.Log.Events()
}

func build(t *testing.T, events []surface.Event) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Build(events)
	require.NoError(t, err)
	return s
}

// edit returns a copy of the events with f applied to the data of each
// event of the given type, re-admitted so the result is a valid log.
func edit(t *testing.T, events []surface.Event, f func(ev *surface.Event)) []surface.Event {
	t.Helper()
	out := make([]surface.Event, len(events))
	for i, ev := range events {
		ev.Data = bytes.Clone(ev.Data)
		f(&ev)
		out[i] = ev
	}
	_, err := surface.Restore(out)
	require.NoError(t, err)
	return out
}

func TestCheck(t *testing.T) {
	base := load(t, demo)
	dir := t.TempDir()
	require.NoError(t, build(t, base).Write(dir))
	tests := []struct {
		name    string
		edit    func(ev *surface.Event)
		changed []string // the files a mismatch must name; nil: the check passes
		diff    string   // a line the diff must show
	}{
		{name: "unchanged", edit: func(*surface.Event) {}},
		{name: "timestamps", edit: func(ev *surface.Event) { ev.Time += 86_400_000 }},
		{name: "tool schema", edit: func(ev *surface.Event) {
			if ev.Type == surface.TypeRequestHeader {
				ev.Data = bytes.ReplaceAll(ev.Data, []byte("The current date and time (UTC)."), []byte("The current date and time."))
			}
		}, changed: []string{"snapshot.json"}, diff: `+           "description": "The current date and time.",`},
		{name: "a reply", edit: func(ev *surface.Event) {
			if ev.Type == surface.TypeAssistantMessage {
				ev.Data = bytes.ReplaceAll(ev.Data, []byte("the plugin examples."), []byte("the plugins."))
			}
		}, changed: []string{"requests/0004-loop.json", "requests/0005-loop.json", "requests/0006-loop.json", "requests/0007-summarize.json"},
			diff: `+       "content": "The examples folder holds the offline scripts, a sample session log and the plugins."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := build(t, edit(t, base, tt.edit)).Check(dir)
			if tt.changed == nil {
				require.NoError(t, err)
				return
			}
			var me *snapshot.MismatchError
			require.True(t, errors.As(err, &me), "want a mismatch, got %v", err)
			require.Equal(t, tt.changed, me.Changed)
			require.Empty(t, me.Added)
			require.Empty(t, me.Removed)
			require.Contains(t, me.Diff, tt.diff)
		})
	}
}

// A prompt change is a new prompts.md section and a new range in
// snapshot.json; the request files before it stay byte for byte, and the
// later ones carry the {{system}} placeholder, not the text.
func TestPromptChange(t *testing.T) {
	events := load(t, demo)
	// The demo's prompt change replaces node 0 at its second system/message.
	cut := -1
	n := 0
	for i, ev := range events {
		if ev.Type == surface.TypeSystemMessage {
			if n++; n == 2 {
				cut = i
				break
			}
		}
	}
	require.Positive(t, cut)
	// The prefix ends at the step before: back up to the last step/end.
	for events[cut].Type != surface.TypeTurnEnd {
		cut--
	}
	before := build(t, events[:cut+1])
	after := build(t, events)
	require.Len(t, before.Prompts, 1)
	require.Len(t, after.Prompts, 2)
	fb, err := before.Files()
	require.NoError(t, err)
	fa, err := after.Files()
	require.NoError(t, err)
	for name, b := range fb {
		if strings.HasPrefix(name, "requests/") {
			require.Equal(t, string(b), string(fa[name]), name)
		}
	}
	require.Contains(t, string(fa["prompts.md"]), "## prompt 2\n\n"+after.Prompts[1]+"\n")
	require.NotContains(t, string(fb["prompts.md"]), "## prompt 2")
	for _, r := range after.Requests {
		require.Contains(t, string(r.Body), `"content": "{{system}}"`, "request %d", r.N)
		require.NotContains(t, string(r.Body), "pirate.\"", "request %d shows the prompt text", r.N)
	}
	require.Equal(t, 3, len(before.Requests))
	require.Equal(t, []int{1, 1, 1, 2, 2, 2, 2, 2}, promptsOf(after))
	diff := snapshot.LineDiff(string(fb["snapshot.json"]), string(fa["snapshot.json"]), 1)
	require.Contains(t, diff, `+       "version": 2,`)
}

func promptsOf(s *snapshot.Snapshot) []int {
	var out []int
	for _, r := range s.Requests {
		out = append(out, r.Prompt)
	}
	return out
}

// Write removes request files a longer earlier snapshot left behind, and
// Check names files that are gone or new.
func TestWriteRemovesStale(t *testing.T) {
	events := load(t, demo)
	dir := t.TempDir()
	require.NoError(t, build(t, events).Write(dir))
	short := build(t, events[:8])
	var me *snapshot.MismatchError
	require.True(t, errors.As(short.Check(dir), &me))
	require.Len(t, me.Removed, 7)
	require.NoError(t, short.Write(dir))
	names, err := os.ReadDir(filepath.Join(dir, "requests"))
	require.NoError(t, err)
	require.Len(t, names, 1)
	require.NoError(t, short.Check(dir))
}

func TestLineDiff(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"x\n", "x\n", ""},
		{"a\nb\nc\n", "a\nB\nc\n", "@@ line 1 @@\n  a\n- b\n+ B\n  c\n"},
		{"a\nc\n", "a\nb\nc\n", "@@ line 1 @@\n  a\n+ b\n  c\n"},
		{"", "a\n", "@@ line 1 @@\n+ a\n"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, snapshot.LineDiff(tt.a, tt.b, 1), "%q → %q", tt.a, tt.b)
	}
}

// On an in-history route a changed prompt is a later system message,
// written {{system:N}}; snapshot.json lists the requests carrying each
// version, in-history ones included.
func TestInHistoryPromptVersions(t *testing.T) {
	ctx := context.Background()
	s := host.NewSession("session-ih", surface.New(surface.WithClock(func() int64 { return 1767268800000 })), nil, host.WithIDs(host.CounterIDs("ih")))
	sections := []host.Section{{Key: "base", Text: "You are a test assistant."}}
	a, err := host.NewAgent(s, host.Config{Route: host.Route{Provider: "offline", Model: "m", ContextWindow: 8192, InHistory: true},
		Model: llm.NewScripted(&llm.Script{Replies: []llm.ScriptReply{{Text: "ok", Repeat: true}}}), Prompt: &host.SectionPrompt{}, Sections: sections})
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		if i == 3 {
			a.SetSections(append(sections, host.Section{Key: "style", Text: "Answer briefly."}))
		}
		_, err := a.Run(ctx, a.UserMessage(fmt.Sprintf("question %d", i)))
		require.NoError(t, err)
	}
	snap := build(t, s.Log().Events())
	require.Len(t, snap.Prompts, 2)
	require.Contains(t, string(snap.Requests[2].Body), `"content": "{{system:2}}"`)
	files, err := snap.Files()
	require.NoError(t, err)
	var h struct {
		Prompts []struct {
			Version  int    `json:"version"`
			Requests string `json:"requests"`
		} `json:"prompts"`
	}
	require.NoError(t, json.Unmarshal(files["snapshot.json"], &h))
	require.Equal(t, "1-3", h.Prompts[0].Requests)
	require.Equal(t, "3", h.Prompts[1].Requests)
}
