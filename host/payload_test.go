package host

import (
	"os"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// Every event of the committed sample logs decodes into its typed form,
// and encoding that form again loses nothing: every member of the logged
// data is there with the same value (a member the type adds is its zero
// value). Between them the samples hold every core event type.
func TestPayloadKeepsEveryMember(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range []string{
		"../examples/sessions/demo.jsonl",
		"store/storetest/testdata/fixture.jsonl",
		"store/storetest/testdata/edge.jsonl",
	} {
		f, err := os.Open(path)
		require.NoError(t, err)
		_, events, _, err := jsonl.ReadEvents(f)
		f.Close()
		require.NoError(t, err, path)
		for _, e := range events {
			p, err := Payload(e)
			require.NoError(t, err, "%s seq %d", path, e.Seq)
			if raw, ok := p.(jsontext.Value); ok {
				require.Equal(t, string(e.Data), string(raw))
				continue
			}
			seen[e.Type] = true
			again, err := json.Marshal(p)
			require.NoError(t, err)
			var was, now any
			require.NoError(t, json.Unmarshal(e.Data, &was))
			require.NoError(t, json.Unmarshal(again, &now))
			require.True(t, kept(was, now), "%s seq %d (%s): %s\nencodes again as\n%s", path, e.Seq, e.Type, e.Data, again)
		}
	}
	for _, typ := range []string{surface.TypeTurnStart, surface.TypeTurnEnd, surface.TypeStepStart, surface.TypeStepEnd,
		surface.TypeSystemMessage, surface.TypeUserMessage, surface.TypeAssistantMessage, surface.TypeAssistantAttempt,
		surface.TypeToolCall, surface.TypeToolResult, surface.TypeRequestHeader, surface.TypeRequestContext,
		surface.TypeLLMRetry, surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd,
		surface.TypeCompactionPrune, surface.TypePluginFailure, TypePluginCall, surface.TypeEndSeed} {
		require.True(t, seen[typ], "no sample event of type %s", typ)
	}
}

// kept reports whether every member of was is in now with an equal
// value, and every member only now has is a zero value.
func kept(was, now any) bool {
	wm, ok := was.(map[string]any)
	if !ok {
		if wa, ok := was.([]any); ok {
			na, ok := now.([]any)
			if !ok || len(wa) != len(na) {
				return false
			}
			for i := range wa {
				if !kept(wa[i], na[i]) {
					return false
				}
			}
			return true
		}
		return reflect.DeepEqual(was, now)
	}
	nm, ok := now.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		if nv, ok := nm[k]; !ok || !kept(v, nv) {
			return false
		}
	}
	for k, v := range nm {
		if _, ok := wm[k]; !ok && !zero(v) {
			return false
		}
	}
	return true
}

func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func TestPayloadOfAPluginType(t *testing.T) {
	p, err := Payload(surface.Event{Type: "acme/note", Data: jsontext.Value(`{"x":1}`)})
	require.NoError(t, err)
	require.Equal(t, jsontext.Value(`{"x":1}`), p)
	_, err = Payload(surface.Event{Seq: 4, Type: surface.TypeToolCall, Data: jsontext.Value(`{"turn":"one"}`)})
	require.ErrorContains(t, err, "event 4 (tool/call)")
}
