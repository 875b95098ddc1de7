package llm

import (
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

func msg(id, role string, blocks ...surface.Block) *surface.Message {
	return &surface.Message{ID: id, Role: role, Content: blocks}
}

func user(id, text string) *surface.Message { return msg(id, surface.RoleUser, surface.Text(text)) }

func reasoning(s string) surface.Block { return surface.Block{Type: surface.BlockReasoning, Text: s} }

func toolResult(id, callID, text string) *surface.Message {
	return msg(id, surface.RoleUser, surface.ToolResult(callID, false, surface.Text(text)))
}

func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

// requireReassembles checks that the stream record of res rebuilds res.
func requireReassembles(t *testing.T, res *Result) {
	t.Helper()
	require.NotNil(t, res)
	require.True(t, jsontext.Value(res.Stream).IsValid(), "stream record is not valid JSON: %s", res.Stream)
	re, err := Reassemble(res.Stream)
	require.NoError(t, err)
	require.Equal(t, res.Content, re.Content, "reassembled content")
	require.Equal(t, res.Usage, re.Usage, "reassembled usage")
	require.Equal(t, res.FinishReason, re.FinishReason, "reassembled finish reason")
	requireFinishOf(t, res.Stream)
}

// requireFinishOf checks that FinishOf reads stream as ReassembleInfo
// does: its result's finish reason, the same info and the same error.
func requireFinishOf(t *testing.T, stream jsontext.Value) {
	t.Helper()
	res, info, err := ReassembleInfo(stream)
	finish, finfo, ferr := FinishOf(stream)
	require.Equal(t, err, ferr, "FinishOf's error")
	require.Equal(t, info, finfo, "FinishOf's info")
	if err == nil {
		require.Equal(t, res.FinishReason, finish, "FinishOf's finish reason")
	}
}

// collect returns an on-func recording deltas and the slice it fills.
func collect() (func(Delta), *[]Delta) {
	var ds []Delta
	return func(d Delta) { ds = append(ds, d) }, &ds
}

func fmtV(v any) string      { return fmt.Sprintf("%v", v) }
func fmtPlusV(v any) string  { return fmt.Sprintf("%+v", v) }
func fmtSharpV(v any) string { return fmt.Sprintf("%#v", v) }
