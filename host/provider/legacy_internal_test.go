package provider

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestBracketLegacy checks which batches of an older minor's plugin the
// host brackets, and which it leaves for admission to judge.
func TestBracketLegacy(t *testing.T) {
	const at = 20
	cp := func(data string, sources ...int64) surface.Proposal {
		return surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(data), Op: surface.Replace(3, 9), Sources: sources}
	}
	plain := cp(`{"id":"c","role":"user","source":{"kind":"plugin","plugin":"p"}}`, 9, 3, 5, 3)
	named := cp(`{"id":"d","role":"user","source":{"kind":"plugin","plugin":"p","compactionId":"mine"}}`)
	note := surface.Proposal{Type: "p/note", Data: []byte(`{}`), Ignorable: true}
	for _, tc := range []struct {
		name  string
		in    []surface.Proposal
		turn  int64
		count int
		types []string
		data  []string // of the bracket events, in order; nil: the batch is unchanged
	}{
		{name: "no checkpoint", in: []surface.Proposal{note}},
		{name: "a bracket of its own", in: []surface.Proposal{{Type: surface.TypeCompactionStart, Data: []byte(`{}`)}, plain}},
		{name: "cites a seq of the batch", in: []surface.Proposal{note, cp(`{}`, 3, at)}},
		{name: "replaces into the batch", in: []surface.Proposal{{Type: surface.TypeUserMessage, Op: surface.Replace(3, at)}}},
		{
			name: "cited seqs, between turns", in: []surface.Proposal{note, plain}, count: 1,
			types: []string{"p/note", surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd},
			data: []string{
				`{"compactionId":"abi1-23","turn":null,"repairedBy":"host"}`,
				`{"compactionId":"abi1-23","shadowedSeqs":[3,5,9]}`,
				`{"compactionId":"abi1-23"}`,
			},
		},
		{
			name: "its own id, no citations, in a turn", in: []surface.Proposal{named}, turn: 4, count: 1,
			types: []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd},
			data: []string{
				`{"compactionId":"mine","turn":4,"repairedBy":"host"}`,
				`{"compactionId":"mine","shadowedSeqs":[3,9]}`,
				`{"compactionId":"mine"}`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, n := bracketLegacy(tc.in, at, tc.turn)
			require.Equal(t, tc.count, n)
			if tc.data == nil {
				require.Equal(t, tc.in, out)
				return
			}
			var types, data []string
			for _, p := range out {
				types = append(types, p.Type)
				if p.Type != surface.TypeUserMessage && p.Type != "p/note" {
					data = append(data, string(p.Data))
				}
			}
			require.Equal(t, tc.types, types)
			require.Equal(t, tc.data, data)
		})
	}
}

// An id a plugin gave its checkpoint is written as a JSON string, whatever
// bytes it holds.
func TestBracketLegacyIDIsJSON(t *testing.T) {
	for _, id := range []string{"plain", "tab\tand\x00nul", "bad\xffutf8", `quote" and \ backslash`} {
		data, err := json.Marshal(map[string]any{"source": map[string]any{"compactionId": strings.ToValidUTF8(id, "")}})
		require.NoError(t, err)
		if !utf8.ValidString(id) {
			data = []byte(`{"source":{"compactionId":"` + id + `"}}`)
		}
		cp := surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Op{Kind: surface.OpReplace, Start: 1, End: 2}, Data: data}
		out, n := bracketLegacy([]surface.Proposal{cp}, 10, 0)
		require.Equal(t, 1, n)
		require.Len(t, out, 4)
		for _, p := range out {
			if p.Type != surface.TypeUserMessage { // the events the host writes
				require.True(t, jsontext.Value(p.Data).IsValid(), "%q: %q", id, p.Data)
			}
		}
	}
}
