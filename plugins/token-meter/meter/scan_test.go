package meter

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// The scanner must read what the reflection-based decoder reads, or give
// up: these tests run both on the same inputs.

// stripKnown drops the Unknown of known-type blocks, which the scanner
// does not build (pricing does not read it).
func stripKnown(blocks []surface.Block) []surface.Block {
	if blocks == nil {
		return nil
	}
	out := make([]surface.Block, len(blocks))
	for i, b := range blocks {
		switch b.Type {
		case surface.BlockText, surface.BlockReasoning, surface.BlockToolCall, surface.BlockToolResult:
			b.Unknown = nil
		}
		b.Content = stripKnown(b.Content)
		out[i] = b
	}
	return out
}

// checkScan compares the scanner with the decoder on data read as an event
// of kind k (and as step data, and its content as a content array), and
// reports whether the scanner read both the data and its content itself.
func checkScan(t *testing.T, data []byte, k nodeKind) bool {
	t.Helper()
	e := &surface.Event{Seq: 7, Type: k.eventType(), Data: data}
	got, ok := scanSurface(data, k)
	want, werr := decodeSurface(e, k)
	if ok {
		require.Nil(t, werr, "the scanner read data the decoder rejects: %s", data)
		require.Equal(t, want.kind, got.kind)
		require.Equal(t, want.at, got.at)
		require.Equal(t, want.hasStep, got.hasStep)
		require.Equal(t, string(want.content), string(got.content))
		require.Equal(t, string(want.stream), string(got.stream))
		require.Equal(t, want.usage, got.usage)
		if got.blocks != nil {
			wb, err := decodeContent(want.content)
			require.NoError(t, err, "the scanner read content the decoder rejects: %s", data)
			require.Equal(t, stripKnown(wb), got.blocks)
		}
	}

	if r, sok := scanStep(data); sok {
		wr, err := decodeStep(e)
		require.Nil(t, err, "the scanner read step data the decoder rejects: %s", data)
		require.Equal(t, wr, r)
	}

	content := data
	if werr == nil {
		content = want.content
	}
	blocks, cok := scanContent(content)
	if cok {
		wb, err := decodeContent(content)
		require.NoError(t, err, "the scanner read content the decoder rejects: %s", content)
		require.Equal(t, stripKnown(wb), blocks)
		for _, kind := range []nodeKind{kindSystem, kindUser, kindAssistant, kindTool} {
			require.Equal(t, newPricer(nil).message(kind, wb), newPricer(nil).message(kind, blocks))
			require.Equal(t, recordingPrice(kind, wb), recordingPrice(kind, blocks))
		}
	}
	return ok && cok
}

// recordingPrice prices content under a counter that records every text it
// is given, and returns the texts.
func recordingPrice(k nodeKind, content []surface.Block) []string {
	c := &recorder{}
	newPricer(c).message(k, content)
	return c.texts
}

type recorder struct{ texts []string }

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Count(text string) int {
	r.texts = append(r.texts, text)
	return len(text)
}

var scanCases = []struct {
	name string
	kind nodeKind
	data string
	fast bool // the scanner reads it itself
}{
	{"user", kindUser, `{"id":"m1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hello"}]}`, true},
	{"user empty", kindUser, `{"content":[]}`, true},
	{"user spaces", kindUser, " {\n\t\"content\" : [ { \"type\" : \"text\" , \"text\" : \"a\" } ] , \"id\" : \"x\" }\r\n", true},
	{"escapes", kindUser, `{"content":[{"type":"text","text":"q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20AC \ud83d\ude00 \u0000"}]}`, true},
	{"unicode", kindUser, `{"content":[{"type":"text","text":"héllo wörld €  日本語 😀"}]}`, true},
	{"unknown fields", kindUser, `{"content":[{"type":"text","text":"a","cache":{"ttl":[1,2.5e3,-0.1,true,false,null]},"x":"y"}],"extra":{"a":{"b":[]}}}`, true},
	{"tool result nested", kindTool, `{"turn":1,"step":2,"message":{"id":"t","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":true,"content":[{"type":"text","text":"out"},{"type":"text","text":"put"},{"type":"image","data":"AAAA","mime":"image/png"}]}]}}`, true},
	{"assistant", kindAssistant, `{"turn":3,"step":1,"message":{"id":"a","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"reasoning","text":"think"},{"type":"text","text":"hi"},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\":\"a.go\"}"}]},"stream":{"chunks":[{"d":"x"}]},"usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":5,"cacheWriteTokens":0,"reasoningTokens":7,"other":1}}`, true},
	{"assistant null stream", kindAssistant, `{"turn":1,"step":1,"message":{"content":[]},"stream":null}`, true},
	{"assistant no step", kindAssistant, `{"message":{"content":[{"type":"text","text":"x"}]}}`, true},
	{"system", kindSystem, `{"message":{"role":"system","content":[{"type":"text","text":"Be terse."}]}}`, true},
	{"image only", kindUser, `{"content":[{"data":"x","type":"image"},{"type":"file","name":"f","size":5}]}`, true},
	{"untyped block", kindUser, `{"content":[{"text":"x"}]}`, true},
	{"negative turn", kindAssistant, `{"turn":-1,"step":0,"message":{"content":[]}}`, true},

	// The scanner gives up; the decoder reads them or rejects them.
	{"lone surrogate", kindUser, `{"content":[{"type":"text","text":"\ud800"}]}`, false},
	{"invalid utf-8", kindUser, "{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}", false},
	{"control character", kindUser, "{\"content\":[{\"type\":\"text\",\"text\":\"a\x01\"}]}", false},
	{"duplicate", kindUser, `{"content":[],"content":[]}`, false},
	{"nested duplicate", kindUser, `{"content":[],"x":{"a":1,"a":2}}`, false},
	{"escaped name", kindUser, `{"cont\u0065nt":[]}`, false},
	{"not an array", kindUser, `{"content":{}}`, false},
	{"no content", kindUser, `{"id":"x"}`, false},
	{"null message", kindAssistant, `{"turn":1,"step":1,"message":null}`, false},
	{"no message", kindAssistant, `{"turn":1,"step":1}`, false},
	{"float turn", kindAssistant, `{"turn":1.0,"step":1,"message":{"content":[]}}`, false},
	{"exponent step", kindAssistant, `{"turn":1,"step":1e0,"message":{"content":[]}}`, false},
	{"huge turn", kindAssistant, `{"turn":123456789012345678901,"step":1,"message":{"content":[]}}`, false},
	{"null usage", kindAssistant, `{"message":{"content":[]},"usage":null}`, false},
	{"text not a string", kindUser, `{"content":[{"type":"text","text":5}]}`, false},
	{"null text", kindUser, `{"content":[{"type":"text","text":null}]}`, false},
	{"block not an object", kindUser, `{"content":["text"]}`, false},
	{"trailing data", kindUser, `{"content":[]} x`, false},
	{"trailing comma", kindUser, `{"content":[1,]}`, false},
	{"bad number", kindUser, `{"content":[],"n":01}`, false},
	{"truncated", kindUser, `{"content":[{"type":"text","text":"ab`, false},
	{"not an object", kindUser, `[]`, false},
}

func TestScanMatchesDecoder(t *testing.T) {
	for _, c := range scanCases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.fast, checkScan(t, []byte(c.data), c.kind))
			if d, ok := scanSurface([]byte(c.data), c.kind); ok {
				_, cok := scanContent(d.content)
				require.Equal(t, cok, d.blocks != nil, "the data's pass and the content's pass disagree")
			}
		})
	}
}

func TestScanStep(t *testing.T) {
	r, ok := scanStep([]byte(`{"turn":4,"step":2,"extra":[{"a":"b"}]}`))
	require.True(t, ok)
	require.Equal(t, stepRef{4, 2}, r)
	for _, data := range []string{`{"turn":4}`, `{"turn":4,"step":null}`, `{"turn":4,"step":2,"turn":5}`, `{"turn":"4","step":2}`} {
		_, ok := scanStep([]byte(data))
		require.False(t, ok, data)
		_, err := readStep(&surface.Event{Seq: 1, Type: surface.TypeStepStart, Data: []byte(data)})
		require.NotNil(t, err, data)
	}
}

func TestScanContentDeep(t *testing.T) {
	deep := `{"type":"text","text":"x"}`
	for range maxScanDepth {
		deep = `{"type":"tool-result","toolCallId":"c","content":[` + deep + `]}`
	}
	_, ok := scanContent([]byte("[" + deep + "]"))
	require.False(t, ok, "the scanner follows nesting deeper than maxScanDepth")
	blocks, err := readContent([]byte("[" + deep + "]"))
	require.NoError(t, err)
	require.Len(t, blocks, 1)
}

func FuzzScan(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c.data), uint8(c.kind))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		k := nodeKind(kind%4 + 1)
		checkScan(t, data, k)
	})
}

// BenchmarkRead reads an assistant message with a tool call and a user
// message of about 300 bytes and 8 KiB as the meter does before pricing
// them (the event's data, then its content blocks), with the scanner and
// with the reflection-based decoder.
//
//	go test -run XXX -bench BenchmarkRead ./plugins/token-meter/meter
func BenchmarkRead(b *testing.B) {
	long := strings.Repeat("The quick brown fox \"jumps\" over the lazy dog.\n", 8<<10/48)
	events := []struct {
		name string
		kind nodeKind
		data string
	}{
		{"assistant", kindAssistant, `{"turn":3,"step":1,"message":{"id":"a","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"Reading the file first."},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\":\"host/agent.go\"}"}]},"usage":{"inputTokens":1200,"outputTokens":20}}`},
		{"user/300B", kindUser, `{"id":"m1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":` + strconv.Quote(long[:280]) + `}]}`},
		{"user/8KiB", kindUser, `{"id":"m1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":` + strconv.Quote(long) + `}]}`},
	}
	for _, ev := range events {
		e := &surface.Event{Seq: 1, Type: ev.kind.eventType(), Data: []byte(ev.data)}
		for _, v := range []struct {
			name    string
			surface func(*surface.Event, nodeKind) (surfaceData, *Error)
			content func(*surfaceData) ([]surface.Block, error)
		}{
			{"scan", readSurface, func(d *surfaceData) ([]surface.Block, error) { return d.lazy().get() }},
			{"decode", decodeSurface, func(d *surfaceData) ([]surface.Block, error) { return decodeContent(d.content) }},
		} {
			b.Run(ev.name+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d, err := v.surface(e, ev.kind)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := v.content(&d); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestPlain8MatchesBytewise(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	rng := rand.New(rand.NewPCG(3, 4))
	interesting := []byte{0, 0x1f, 0x20, 0x21, '"', '\\', 'a', 0x7f, 0x80, 0xff, 0x5b, 0x5d}
	for range 200_000 {
		var b [8]byte
		for i := range b {
			if rng.IntN(2) == 0 {
				b[i] = interesting[rng.IntN(len(interesting))]
			} else {
				b[i] = byte(rng.Uint32())
			}
		}
		want := true
		for _, c := range b {
			want = want && plain(c)
		}
		require.Equal(t, want, plain8(binary.LittleEndian.Uint64(b[:])), "% x", b)
	}
}
