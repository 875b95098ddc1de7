package abi

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestProposalPresence(t *testing.T) {
	cases := []struct {
		name string
		in   Proposal
	}{
		{"log-only, no sources", Proposal{Type: "compaction/start", Data: []byte(`{"turn":1}`)}},
		{"append", Proposal{Type: "system/message", Data: []byte(`{}`), Intent: Intent{Kind: IntentAppend}}},
		{"replace zero seqs", Proposal{Type: "user/message", Intent: Intent{Kind: IntentReplace}}},
		{"replace with sources", Proposal{
			Type: "user/message", Data: []byte(`{"id":"x"}`),
			Intent:          Intent{Kind: IntentReplace, StartSeq: 3, EndSeq: 9},
			SourceEventSeqs: []int64{10, 11, 3, 4, 9}, HasSourceEventSeqs: true,
		}},
		{"present but empty sources", Proposal{Type: "user/message", Intent: Intent{Kind: IntentAppend}, HasSourceEventSeqs: true}},
		{"ignorable", Proposal{Type: "x/y", Ignorable: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got Proposal
			require.NoError(t, got.Decode(tc.in.Encode(nil)))
			require.Equal(t, tc.in.Type, got.Type)
			require.Equal(t, string(tc.in.Data), string(got.Data))
			require.Equal(t, tc.in.Intent, got.Intent)
			require.Equal(t, tc.in.HasSourceEventSeqs, got.HasSourceEventSeqs)
			require.Equal(t, len(tc.in.SourceEventSeqs), len(got.SourceEventSeqs))
			for i := range tc.in.SourceEventSeqs {
				require.Equal(t, tc.in.SourceEventSeqs[i], got.SourceEventSeqs[i])
			}
			require.Equal(t, tc.in.Ignorable, got.Ignorable)
		})
	}
}

func TestOptionalBytesPresence(t *testing.T) {
	var r CompactionResult
	require.NoError(t, r.Decode((&CompactionResult{HasState: true}).Encode(nil)))
	require.True(t, r.HasState, "an explicitly empty state must stay present")
	require.NotNil(t, r.State)
	require.Empty(t, r.State)

	require.NoError(t, r.Decode((&CompactionResult{}).Encode(nil)))
	require.False(t, r.HasState)

	var m MeasureRequest
	require.NoError(t, m.Decode((&MeasureRequest{HasHeaderOverride: true}).Encode(nil)))
	require.True(t, m.HasHeaderOverride)

	var n Node
	require.NoError(t, n.Decode((&Node{Seq: 4, HasTokens: true}).Encode(nil)))
	require.True(t, n.HasTokens, "a cached count of 0 tokens is still a known count")
	require.Zero(t, n.Tokens)

	var me Measurement
	require.NoError(t, me.Decode((&Measurement{HasEstimateError: true}).Encode(nil)))
	require.True(t, me.HasEstimateError, "an estimate error of 0 is still a known error")
	require.Zero(t, me.EstimateError)
	require.NoError(t, me.Decode((&Measurement{TotalTokens: 5}).Encode(nil)))
	require.False(t, me.HasEstimateError)
}

// The minor-1 fields of Measurement survive a round trip, and a frame of a
// minor-0 meter (no split, no estimate error, no tokenizer) decodes with
// them absent.
func TestMeasurementMinor1Fields(t *testing.T) {
	in := Measurement{
		LogRevision: 12, Baseline: Baseline{Kind: BaselineUsage, Tokens: 900}, TotalTokens: 950, SurfaceTokens: 700,
		Nodes: []NodeTokens{{Seq: 3, Tokens: 40, HeuristicTokens: 44}},
		Breakdown: Breakdown{SystemTokens: 100, ToolsTokens: 60, MessageTokens: 600,
			UserTokens: 200, AssistantTokens: 150, ToolResultTokens: 250},
		EstimateError: -17, HasEstimateError: true, Tokenizer: "o200k_base",
	}
	var got Measurement
	require.NoError(t, got.Decode(in.Encode(nil)))
	require.Equal(t, in, got)
	require.True(t, got.Breakdown.HasSplit())

	// The same measurement as a minor-0 meter writes it: fields 1 to 7 only.
	var old []byte
	old = protowire.AppendTag(old, 1, protowire.VarintType)
	old = protowire.AppendVarint(old, 12)
	old = protowire.AppendTag(old, 7, protowire.BytesType)
	old = protowire.AppendBytes(old, (&Breakdown{SystemTokens: 100, ToolsTokens: 60, MessageTokens: 600}).Encode(nil))
	require.NoError(t, got.Decode(old))
	require.Equal(t, Measurement{LogRevision: 12, Breakdown: Breakdown{SystemTokens: 100, ToolsTokens: 60, MessageTokens: 600}}, got)
	require.False(t, got.Breakdown.HasSplit(), "a minor-0 breakdown has no split")
	require.True(t, (&Breakdown{SystemTokens: 5}).HasSplit(), "no message tokens: the empty split is exact")
}

// Sub-messages whose length needs 2 or 3 varint bytes take the shifting path
// of closeMessage.
func TestLongSubMessages(t *testing.T) {
	for _, size := range []int{0, 1, 126, 127, 128, 200, 16383, 16384, 70000, 1 << 21} {
		in := RenderRequest{
			Sections: []Section{{Key: "a", Text: strings.Repeat("x", size)}, {Key: "b", Text: "tail"}},
			Route:    Route{Provider: "p", Model: strings.Repeat("m", size/3)},
		}
		var out RenderRequest
		require.NoError(t, out.Decode(in.Encode([]byte("prefix")[6:])), "size %d", size)
		require.Equal(t, in, out, "size %d", size)
	}
}

func TestDecodeReusesSlices(t *testing.T) {
	var r RenderRequest
	require.NoError(t, r.Decode((&RenderRequest{Sections: []Section{{Key: "a"}, {Key: "b"}, {Key: "c"}}}).Encode(nil)))
	first := &r.Sections[0]
	require.NoError(t, r.Decode((&RenderRequest{Sections: []Section{{Key: "z", Text: "t"}}}).Encode(nil)))
	require.Equal(t, []Section{{Key: "z", Text: "t"}}, r.Sections)
	require.Same(t, first, &r.Sections[0], "Decode should reuse the slice's backing array")
	require.NoError(t, r.Decode(nil))
	require.Nil(t, r.Sections)
}

func TestUnknownFieldsAreSkipped(t *testing.T) {
	b := (&Generations{Replace: 2, Content: 3, LogLength: 40}).Encode(nil)
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	b = protowire.AppendString(b, "future")
	b = protowire.AppendTag(b, 100, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 7)
	b = protowire.AppendTag(b, 101, protowire.VarintType)
	b = protowire.AppendVarint(b, 1<<60)
	var g Generations
	require.NoError(t, g.Decode(b))
	require.Equal(t, Generations{Replace: 2, Content: 3, LogLength: 40}, g)
}

func TestUnpackedRepeatedScalars(t *testing.T) {
	var b []byte
	for _, k := range []Kind{KindCompaction, KindTokenMeter} {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(k))
	}
	var d Description
	require.NoError(t, d.Decode(b))
	require.Equal(t, []Kind{KindCompaction, KindTokenMeter}, d.Kinds)
	require.True(t, d.Provides(KindTokenMeter))
	require.False(t, d.Provides(KindSystemPrompt))
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		dst  codec
		want string
	}{
		{"truncated tag", []byte{0x80}, new(Response), "decode Response"},
		{"field zero", []byte{0x00, 0x01}, new(Response), "decode Response"},
		{"truncated bytes", []byte{0x1a, 0x05, 'a'}, new(Response), "decode Response field 3"},
		{"wrong wire type", []byte{0x0a, 0x00}, new(Response), "decode Response field 1: wrong wire type 2"},
		{"invalid utf-8", []byte{0x12, 0x02, 0xff, 0xfe}, new(Response), "invalid UTF-8"},
		{"nested error", []byte{0x0a, 0x02, 0x08, 0x80}, new(NodeList), "decode Node field 1"},
		{"huge declared length", append([]byte{0x1a}, protowire.AppendVarint(nil, 1<<40)...), new(Response), "decode Response field 3"},
		{"end group alone", []byte{0x0c}, new(Generations), "decode Generations"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.dst.Decode(tc.in)
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrMalformed))
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// Decoding allocates in proportion to the input, whatever lengths it claims.
func TestDecodeAllocationIsBounded(t *testing.T) {
	inputs := [][]byte{
		append([]byte{0x0a}, protowire.AppendVarint(nil, 1<<31)...),                               // a giant node list claim
		bytes.Repeat([]byte{0x0a, 0x00}, 4096),                                                    // many empty nodes
		append(append([]byte{0x2a}, protowire.AppendVarint(nil, 8192)...), make([]byte, 8192)...), // big packed list
	}
	for i, in := range inputs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var nl NodeList
		_ = nl.Decode(in)
		var p Proposal
		_ = p.Decode(in)
		var m Measurement
		_ = m.Decode(in)
		var c CompactionResult
		_ = c.Decode(in)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		// Documented bound (docs/abi.md): about 12x the input per decoder
		// for the densest message (NodeTokens, 24 bytes per 2 input bytes).
		require.Less(t, allocated, uint64(4*16*len(in)+64<<10), "input %d allocated %d bytes for %d input bytes", i, allocated, len(in))
	}
}

func TestTooManyProposals(t *testing.T) {
	r := CompactionResult{Proposals: make([]Proposal, MaxProposals+1)}
	var got CompactionResult
	err := got.Decode(r.Encode(nil))
	require.ErrorIs(t, err, ErrMalformed)
	require.Contains(t, err.Error(), "more than 1024 proposals")
	r.Proposals = r.Proposals[:MaxProposals]
	require.NoError(t, got.Decode(r.Encode(nil)))
	require.Len(t, got.Proposals, MaxProposals)
}

func TestMethodKinds(t *testing.T) {
	require.Equal(t, KindUnspecified, MethodInit.Kind())
	require.Equal(t, KindUnspecified, MethodDescribe.Kind())
	require.Equal(t, KindSystemPrompt, MethodPromptRender.Kind())
	for _, m := range []Method{MethodCompactionPreStep, MethodCompactionManual, MethodCompactionOverflow, MethodCompactionRegion} {
		require.Equal(t, KindCompaction, m.Kind(), m.String())
	}
	require.Equal(t, KindTokenMeter, MethodMeterObserve.Kind())
	require.Equal(t, KindTokenMeter, MethodMeterMeasure.Kind())
	require.Equal(t, "method(77)", Method(77).String())
	ptr, n := UnpackOutput(PackOutput(0xdeadbeef, 0x01020304))
	require.Equal(t, uint32(0xdeadbeef), ptr)
	require.Equal(t, uint32(0x01020304), n)
}

func TestGrants(t *testing.T) {
	for _, imp := range Imports {
		require.True(t, Granted(KindCompaction, imp) || imp == "", imp)
		require.True(t, Granted(KindUnspecified, imp) == (imp == ImportLastError), imp)
	}
	require.False(t, Granted(KindSystemPrompt, ImportSummarize))
	require.False(t, Granted(KindTokenMeter, ImportSummarize))
	require.False(t, Granted(KindTokenMeter, ImportMeasure))
	require.True(t, Granted(KindTokenMeter, ImportCountTokens))
	require.True(t, Granted(KindSystemPrompt, ImportCountTokens))
	require.False(t, Granted(KindSystemPrompt, ImportSurfaceNodes))
	// event is granted where message is.
	for _, k := range append([]Kind{KindUnspecified}, Kinds...) {
		require.Equal(t, Granted(k, ImportMessage), Granted(k, ImportEvent), k.String())
	}
}

// The minor-2 region additions round-trip, and a description or request
// of an older minor (without them) decodes to their zero values.
func TestRegionRoundTrip(t *testing.T) {
	d := Description{Name: "c", Kinds: []Kind{KindCompaction}, AbiMinor: 2, Methods: []Method{MethodCompactionRegion}}
	var got Description
	require.NoError(t, got.Decode(d.Encode(nil)))
	require.Equal(t, d, got)
	require.True(t, got.Implements(MethodCompactionRegion))
	old := Description{Name: "c", Kinds: []Kind{KindCompaction}, AbiMinor: 1}
	require.NoError(t, got.Decode(old.Encode(nil)))
	require.Nil(t, got.Methods)
	require.False(t, got.Implements(MethodCompactionRegion))

	r := CompactionRequest{Turn: 0, CommandID: "c1", RegionStartSeq: 7, RegionEndSeq: 12, State: []byte("s")}
	var gr CompactionRequest
	require.NoError(t, gr.Decode(r.Encode(nil)))
	require.Equal(t, r, gr)

	e := EventData{Seq: 42, Type: "tool/result", Data: []byte(`{"turn":3,"step":2}`)}
	var ge EventData
	require.NoError(t, ge.Decode(e.Encode(nil)))
	require.Equal(t, e, ge)
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic, and a
// value that decodes must re-encode and decode to the same value.
func FuzzDecode(f *testing.F) {
	f.Add((&Response{Status: StatusPanic, Error: "boom", Result: []byte{1, 2}}).Encode(nil))
	f.Add((&CompactionResult{Proposals: []Proposal{{Type: "a/b", Intent: Intent{Kind: IntentReplace, StartSeq: 1, EndSeq: 2}, HasSourceEventSeqs: true, SourceEventSeqs: []int64{1, 2}}}, HasState: true}).Encode(nil))
	f.Add((&Measurement{Nodes: []NodeTokens{{Seq: 1, Tokens: 2}}, Baseline: Baseline{Kind: BaselineUsage, Tokens: 9}}).Encode(nil))
	f.Add((&Measurement{Breakdown: Breakdown{MessageTokens: 3, UserTokens: 1, AssistantTokens: 1, ToolResultTokens: 1}, HasEstimateError: true, Tokenizer: "cl100k_base"}).Encode(nil))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x80})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, name := range sortedKeys(goTypes) {
			v := goTypes[name]()
			if v.Decode(in) != nil {
				continue
			}
			once := v.Encode(nil)
			w := goTypes[name]()
			if err := w.Decode(once); err != nil {
				t.Fatalf("%s: re-encoded value does not decode: %v", name, err)
			}
			if twice := w.Encode(nil); !bytes.Equal(once, twice) {
				t.Fatalf("%s: encoding is not stable", name)
			}
		}
	})
}

// The byte-level examples of docs/abi.md, section 4.4.
func TestWireExamples(t *testing.T) {
	hexOf := func(b []byte) string {
		const digits = "0123456789abcdef"
		var s []byte
		for i, c := range b {
			if i > 0 {
				s = append(s, ' ')
			}
			s = append(s, digits[c>>4], digits[c&15])
		}
		return string(s)
	}
	req := RenderRequest{Sections: []Section{{Key: "a", Text: "b"}}, Route: Route{Provider: "p", Model: "m"}}
	require.Equal(t, "0a 06 0a 01 61 12 01 62 12 06 0a 01 70 12 01 6d", hexOf(req.Encode(nil)))
	ok := Response{Result: (&RenderResult{Prompt: "hi"}).Encode(nil)}
	require.Equal(t, "1a 04 0a 02 68 69", hexOf(ok.Encode(nil)))
	fail := Response{Status: StatusPluginError, Error: "no"}
	require.Equal(t, "08 01 12 02 6e 6f", hexOf(fail.Encode(nil)))
	p := Proposal{Type: "u/m", Intent: Intent{Kind: IntentReplace, StartSeq: 1, EndSeq: 2}, HasSourceEventSeqs: true, SourceEventSeqs: []int64{5, 1, 2}}
	require.Equal(t, "0a 03 75 2f 6d 22 04 08 01 10 02 2a 05 0a 03 05 01 02", hexOf(p.Encode(nil)))
	region := CompactionRequest{RegionStartSeq: 7, RegionEndSeq: 12}
	require.Equal(t, "40 07 48 0c", hexOf(region.Encode(nil)))
	ev := EventData{Seq: 42, Type: "a/b", Data: []byte("{}")}
	require.Equal(t, "08 2a 12 03 61 2f 62 1a 02 7b 7d", hexOf(ev.Encode(nil)))
}

func TestDescriptionEvents(t *testing.T) {
	in := Description{Name: "p", Kinds: []Kind{KindCompaction}, AbiMinor: Minor, Events: []string{"p/note", ""}}
	var out Description
	require.NoError(t, out.Decode(in.Encode(nil)))
	require.Equal(t, in, out, "an empty declared type is kept: the host refuses it, not the codec")

	// A minor-1 description (no field 6) decodes with no events.
	old := Description{Name: "p", Kinds: []Kind{KindCompaction}, AbiMinor: 1}
	out = Description{Events: []string{"stale"}}
	require.NoError(t, out.Decode(old.Encode(nil)))
	require.Nil(t, out.Events)
}
