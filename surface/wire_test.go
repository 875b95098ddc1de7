package surface_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// The codec of wire.go is checked against the reflective codec it replaced
// (oracle_test.go): on decode the same message or the same class of error
// (syntax or kind), on encode the same bytes or an error from both.

// wireMessages are message objects that probe the decode rules.
var wireMessages = []string{
	`{"id":"m","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hi"}]}`,
	`{"id":"m","role":"assistant","source":{"kind":"model","provider":"p","model":"x","extra":[1,{"a":null}]},"content":[{"type":"reasoning","text":"r","signature":"s"},{"type":"tool-call","id":"c1","name":"read","arguments":"{}","cache":{"x":1}}],"z":true,"a":"b"}`,
	`{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":true,"content":[{"type":"text","text":"x"},{"type":"image","data":"AAA","mime":"image/png"}]}]}`,
	`{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1"}]}`,
	`{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":null,"content":null}]}`,
	` { "id" : "sp" , "role":"user" ,"source" : { "kind" : "user" , "k" : [ 1 , 2 ] } , "content" : [ { "type" : "text" , "text" : "a" , "u" : { } } ] , "w" : 1.50 } `,
	`{"id":null,"role":null,"source":null,"content":null}`,
	`{}`, `null`, `[]`, `"m"`, `1`, `true`, ``, ` `, `{"id":"a"} {}`, `{"id":"a"}x`,
	`{"ID":"m","Role":"user","Content":[],"Source":{}}`,
	`{"id":"a","id":"b"}`,
	`{"id":"a","x":1,"x":2}`,
	`{"id":"a","source":{"kind":"u","kind":"v"}}`,
	`{"content":[{"type":"text","text":"a","text":"b"}]}`,
	`{"content":[{"type":"image","u":1,"u":2}]}`,
	`{"id":1}`, `{"role":[]}`, `{"source":"user"}`, `{"source":[]}`, `{"source":{"kind":1}}`,
	`{"content":{}}`, `{"content":"x"}`, `{"content":[1]}`, `{"content":[null]}`, `{"content":["text"]}`,
	`{"content":[{"type":"text","text":1}]}`, `{"content":[{"type":"tool-call","id":"c","arguments":{}}]}`,
	`{"content":[{"type":"tool-result","isError":"yes"}]}`, `{"content":[{"type":"tool-result","isError":0}]}`,
	`{"content":[{"type":"tool-result","content":{}}]}`, `{"content":[{"type":"tool-result","content":[{"type":"text","text":2}]}]}`,
	`{"content":[{"type":1,"text":2}]}`, `{"content":[{"type":null}]}`, `{"content":[{"text":"no type"}]}`,
	`{"content":[{"type":"Text","text":1}]}`, `{"content":[{"typ\u0065":"te\u0078t","t\u0065xt":"\u00e9\n"}]}`,
	`{"content":[{"type":"image","data":1e400}]}`,
	`{"id":"\ud800"}`, "{\"id\":\"\xff\"}", "{\"x\":\"\xff\"}", "{\"content\":[{\"type\":\"image\",\"x\":\"\xff\"}]}",
	`{"id":"a\u0000b","role":"\"q\"","source":{"kind":"\/"},"\u0069d2":1}`,
	`{"a":1,"b":{"c":[true,false,null]},"id":"x"}`,
	`{"content":[{"type":"tool-result","content":[{"type":"tool-result","content":[{"type":"text","text":"deep"}]}]}]}`,
	`{"id":"a",}`, `{"id" "a"}`, `{"id":"a"`, `{"content":[{"type":"text"]}`,
	`{"id":-0,"x":-0}`, `{"x":01}`,
}

func decodeClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case surface.IsSyntaxError(err):
		return "syntax"
	}
	return "kind"
}

// checkDecode compares the two decoders on raw and, when both accept it,
// the two encoders on the result.
func checkDecode(t *testing.T, raw []byte) {
	t.Helper()
	want, wantErr := surface.OracleDecodeMessage(raw)
	got, gotErr := surface.DecodeMessage(raw)
	wantClass, gotClass := decodeClass(wantErr), decodeClass(gotErr)
	if wantClass == "kind" && gotClass == "syntax" && !jsontext.Value(raw).IsValid() {
		// The reflective decoder stops at a top-level value of the wrong
		// kind before reading the invalid text after it; DecodeMessage
		// checks the text first. Both refuse.
		wantClass = "syntax"
	}
	require.Equal(t, wantClass, gotClass, "decode %q: oracle %v, wire %v", raw, wantErr, gotErr)
	if wantErr != nil {
		return
	}
	require.Equal(t, want, got, "decode %q", raw)
	checkEncode(t, got)
}

// checkEncode compares the encoders on m: the message, each block, and
// the message inside a StepMessage through Data, as the host writes it.
func checkEncode(t *testing.T, m surface.Message) {
	t.Helper()
	want, wantErr := surface.OracleEncodeMessage(m)
	got, gotErr := surface.AppendMessage(nil, &m)
	require.Equal(t, wantErr == nil, gotErr == nil, "encode %#v: oracle %v, wire %v", m, wantErr, gotErr)
	if wantErr != nil {
		return
	}
	require.Equal(t, string(want), string(got))
	viaJSON, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, string(want), string(viaJSON))
	for _, b := range m.Content {
		want, wantErr := surface.OracleEncodeBlock(b)
		got, gotErr := json.Marshal(b)
		require.Equal(t, wantErr == nil, gotErr == nil)
		require.Equal(t, string(want), string(got))
	}
	data, err := surface.Data(surface.StepMessage{Turn: 1, Step: 2, Message: m})
	require.NoError(t, err)
	require.Equal(t, `{"turn":1,"step":2,"message":`+string(want)+`}`, string(data))
	back, err := surface.DecodeMessage(got)
	require.NoError(t, err)
	oracleBack, err := surface.OracleDecodeMessage(got)
	require.NoError(t, err)
	require.Equal(t, oracleBack, back, "decode of %s", got)
}

func TestWireMessageMatchesOracle(t *testing.T) {
	for i, s := range wireMessages {
		t.Run(strconv.Itoa(i), func(t *testing.T) { checkDecode(t, []byte(s)) })
	}
}

func TestWireDecodeErrors(t *testing.T) {
	cases := []struct{ in, frag string }{
		{`{"id":1}`, "message.id must be a string or null, not a number"},
		{`{"source":[]}`, "message.source must be an object or null, not an array"},
		{`{"content":{}}`, "message.content must be an array or null, not an object"},
		{`{"content":[{"type":"tool-result","isError":"yes"}]}`, "block.isError must be a boolean or null, not a string"},
		{`{"content":[{"type":"tool-result","content":[{"type":"text","text":2}]}]}`, "block.text must be a string or null, not a number"},
		{`"m"`, "message must be an object, not a string"},
		{`{"id":"a"} {}`, "data after the JSON value"},
		{`{"id":"a","id":"b"}`, "duplicate object member name"},
	}
	for _, c := range cases {
		_, err := surface.DecodeMessage([]byte(c.in))
		require.ErrorContains(t, err, c.frag, c.in)
	}
}

// TestWireEncodeMatchesOracle encodes messages no decoder produces: values
// Unknown does not allow, names Unknown repeats, invalid UTF-8, nil and
// empty content, typed fields a block's type does not write.
func TestWireEncodeMatchesOracle(t *testing.T) {
	blocks := []surface.Block{
		surface.Text("a"), {Type: surface.BlockText, Text: "a", ID: "ignored", Content: []surface.Block{}},
		surface.ToolCall("c", "read", `{"p":1}`), {Type: surface.BlockToolResult, ToolCallID: "c"},
		surface.ToolResult("c", true, surface.Text("x"), surface.Block{Type: "image", Unknown: jsontext.Value(`{"type":"image","d":1}`)}),
		{Type: "image"}, {Type: ""}, {Type: "file", Unknown: jsontext.Value(` {"type" : "file"} `)},
		{Type: surface.BlockText, Text: "x", Unknown: jsontext.Value(`{"cache":true}`)},
	}
	unknowns := []string{"", `{}`, ` { "z" : [ 1 , 2 ] , "a" : {} } `, `{"id":"dup"}`, `{"kind":"dup"}`, `{"a":1,"a":2}`,
		`[]`, `null`, `1`, `{`, `{"a":1} x`, "{\"a\":\"\xff\"}", "{\"\xff\":1}", `{"a":1}{}`, ` `, `{"plugin":"p"}`, `{"text":"t"}`}
	strs := []string{"", "plain", "é\u2028<>&\"\\\n\x00", "\xff", "a\xed\xa0\x80"}
	for _, u := range unknowns {
		for _, s := range strs {
			m := surface.Message{ID: s, Role: "user", Source: surface.Source{Kind: "user", Plugin: s, Unknown: jsontext.Value(u)},
				Content: blocks, Unknown: jsontext.Value(u)}
			checkEncode(t, m)
			m.Content = nil
			checkEncode(t, m)
			m.Source.Unknown = nil
			for _, b := range blocks {
				b.Text, b.Unknown = s, jsontext.Value(u)
				m.Content = []surface.Block{b}
				checkEncode(t, m)
			}
		}
	}
}

// wireHeaders are request/header data objects that probe the header rules.
var wireHeaders = []string{
	`{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m","reasoningEffort":"high","temperature":0.5,"maxTokens":100,"stop":["a","b"],"x":1},"adapterDefaults":{"reasoningEffort":true,"maxTokens":true},"tools":[{"name":"read"}, {"name":"w","x":[1]}]},"reason":"resume","startsSeries":true,"other":{}}`,
	`{"header":{"config":{"provider":"p","model":"m"},"system":null},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"tools":null},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"tools":[]},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"tools":{}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"tools":[1,null,"s"]},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":null},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":[]},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":false}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"temperature":true}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":null,"temperature":null,"stop":null}},"reason":null}`,
	`{"header":{"config":{"provider":"p","model":"m","stop":[]}},"reason":"x"}`,
	`{"header":{"config":{"provider":"p","model":"m","stop":[null,"a"]}},"reason":"initial"}`,
	`{"header":{"config":{"provider":"p","model":"m","stop":[1]}}}`,
	`{"header":{"config":{"provider":"p","model":"m","stop":"a"}}}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":1.5}}}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":1e3}}}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":-0}}}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":9223372036854775808}}}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":-9223372036854775808}}}`,
	`{"header":{"config":{"provider":"p","model":"m","maxTokens":"1"}}}`,
	`{"header":{"config":{"provider":"p","model":"m","temperature":1e400}}}`,
	`{"header":{"config":{"provider":"p","model":"m","temperature":1e-400}}}`,
	`{"header":{"config":{"provider":"p","model":"m","temperature":"0.5"}}}`,
	`{"header":{"config":{"provider":1,"model":"m"}}}`,
	`{"header":{"config":null}}`, `{"header":{"config":[]}}`, `{"header":null}`, `{"header":[]}`, `{"header":"h"}`,
	`{"reason":1}`, `{"reason":"initial"}`, `{}`,
	`{"Header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}`,
	`{"header":{"Config":{"provider":"p","model":"m"},"config":{"Provider":"p","provider":"q","model":"m"}},"reason":"initial"}`,
	`{"h\u0065ader":{"config":{"provider":"p","model":"m"}},"reason":"initial"}`,
}

func checkHeader(t *testing.T, data []byte) {
	t.Helper()
	if !jsontext.Value(data).IsValid() || jsontext.Value(data).Kind() != '{' {
		return // admission reads only valid objects
	}
	want, got := surface.OracleHeader(data), surface.WireHeader(data)
	require.Equal(t, decodeClass(want.DecodeErr), decodeClass(got.DecodeErr), "header %s: oracle %v, wire %v", data, want.DecodeErr, got.DecodeErr)
	if want.DecodeErr != nil {
		return
	}
	require.Equal(t, want.Reason, got.Reason)
	require.Equal(t, want.Bad == "", got.Bad == "", "header %s: oracle %q, wire %q", data, want.Bad, got.Bad)
	require.Equal(t, want.Header, got.Header)
	if !strings.Contains(string(data), `"adapterDefaults":{"`) {
		require.Equal(t, want.Bad, got.Bad) // only a map's order can differ
	}
}

func TestWireHeaderMatchesOracle(t *testing.T) {
	for i, s := range wireHeaders {
		t.Run(strconv.Itoa(i), func(t *testing.T) { checkHeader(t, []byte(s)) })
	}
}

// wireRewrites are pairs of tool/result data: the original and a proposed
// replacement.
var wireRewrites = [][2]string{
	{string(toolResult{turn: 1, step: 1, id: "r", callID: "c", text: "a"}.data()), string(toolResult{turn: 1, step: 1, id: "r", callID: "c", text: "b"}.data())},
	{string(toolResult{turn: 1, step: 1, id: "r", callID: "c", text: "a"}.data()), string(toolResult{turn: 1, step: 1, id: "r2", callID: "c", text: "a"}.data())},
	{string(toolResult{turn: 1, step: 1, id: "r", callID: "c", text: "a", metaJSON: `{"a":1,"b":[1,2]}`}.data()), string(toolResult{turn: 1, step: 1, id: "r", callID: "c", text: "", metaJSON: `{"b":[1,2.0],"a":1e0}`}.data())},
	{string(toolResult{turn: 1, step: 1, id: "r", callID: "c", metaJSON: `{"a":1,"b":[1,2]}`}.data()), string(toolResult{turn: 1, step: 1, id: "r", callID: "c", metaJSON: `{"b":[2,1],"a":1}`}.data())},
	{`{"message":{"content":[{"type":"tool-result","content":[1e400]}]}}`, `{"message":{"content":[{"type":"tool-result","content":[]}]}}`},
	{`{"message":{"content":[{"type":"tool-result","content":[1]},{}]}}`, `{"message":{"content":[{"type":"tool-result","content":[2]},{}]}}`},
	{`{"message":{"content":[{"type":"tool-result","content":[1]}]}}`, `{"message":{"content":[{"type":"tool-result"}]}}`},
	{`{"message":{"content":[{"type":"tool-result","content":[1]}]}}`, `{"message":{"content":[{"type":"tool-result","content":null,"x":1}]}}`},
	{`{"message":{"content":[5]}}`, `{"message":{"content":[5]}}`},
	{`{"message":{"content":[{"content":1}]},"x":{"message":{"content":[{"content":1}]}}}`, `{"message":{"content":[{"content":2}]},"x":{"message":{"content":[{"content":2}]}}}`},
	{`{"message":{"content":[{"content":1}]},"content":1}`, `{"message":{"content":[{"content":2}]},"content":2}`},
	{`{"m\u0065ssage":{"content":[{"content":1}]}}`, `{"message":{"content":[{"content":2}]}}`},
	{`{"message":{"content":[{"content":1}]}}`, `{"message":{"cont\u0065nt":[{"cont\u0065nt":2}]}}`},
	{`{"a":"\u00e9","b":9007199254740993,"c":[true,null,false]}`, `{"a":"é","b":9007199254740992,"c":[true,null,false]}`},
	{`{"a":"x","b":1}`, `{"a":"y","b":1}`}, {`{"a":1}`, `{"a":"1"}`}, {`{"a":[]}`, `{"a":{}}`}, {`{"a":null}`, `{}`},
	{`{"a":1e400}`, `{"a":1e400}`}, {`{"a":true}`, `{"a":false}`}, {`[1]`, `[1]`}, {`1`, `1.0`},
}

func checkRewrite(t *testing.T, a, b []byte) {
	t.Helper()
	if !jsontext.Value(a).IsValid() || !jsontext.Value(b).IsValid() {
		return
	}
	require.Equal(t, surface.OracleSameResult(a, b), surface.WireSameResult(a, b), "rewrite %s -> %s", a, b)
}

func TestWireRewriteMatchesOracle(t *testing.T) {
	for i, c := range wireRewrites {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			checkRewrite(t, []byte(c[0]), []byte(c[1]))
			checkRewrite(t, []byte(c[1]), []byte(c[0]))
		})
	}
}

// TestWireMatchesOracleOnFoldLogs runs the seeds of FuzzFold and compares
// the codecs on every message, header and tool/result pair of their logs.
func TestWireMatchesOracleOnFoldLogs(t *testing.T) {
	for _, seed := range fuzzFoldSeeds() {
		r := newFuzzRun(t, seed)
		r.run()
		evs := r.l.Events()
		for i, e := range evs {
			checkDecode(t, e.Data)
			if msg := member(e.Data, "message"); msg != nil {
				checkDecode(t, msg)
			}
			checkHeader(t, e.Data)
			for _, o := range evs[:i] {
				if o.Type == surface.TypeToolResult && e.Type == surface.TypeToolResult {
					checkRewrite(t, o.Data, e.Data)
				}
			}
		}
	}
}

func member(obj []byte, name string) []byte {
	var m map[string]jsontext.Value
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[name]
}

// corpus returns the checked-in inputs of a fuzz target in testdata.
func corpus(tb testing.TB, target string) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(tb, err)
		for _, ln := range strings.Split(string(b), "\n")[1:] {
			ln = strings.TrimSpace(ln)
			if s, ok := strings.CutPrefix(ln, "[]byte("); ok {
				if u, err := strconv.Unquote(strings.TrimSuffix(s, ")")); err == nil {
					out = append(out, []byte(u))
				}
			}
		}
	}
	return out
}

// FuzzWire: on any bytes, the two codecs agree on decoding a message (read
// as a message, as an event line's data and its message member), on
// encoding what they decoded, on a request header and on a tool/result
// rewrite of the input against the seeds.
func FuzzWire(f *testing.F) {
	for _, s := range wireMessages {
		f.Add([]byte(s))
	}
	for _, s := range wireHeaders {
		f.Add([]byte(s))
	}
	for _, c := range wireRewrites {
		f.Add([]byte(c[0]))
	}
	f.Add(userData("u", "hi"))
	f.Add(systemData(1, 1, "s", "prompt"))
	f.Add(assistantData(1, 1, "a", "x", "c1", "c2"))
	f.Add(toolResult{turn: 1, step: 1, id: "r", callID: "c1", text: "ok", metaJSON: `{"k":[1]}`}.data())
	for _, target := range []string{"FuzzDecode", "FuzzWire"} {
		for _, in := range corpus(f, target) {
			f.Add(in)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecode(t, in)
		if ev, err := surface.DecodeEvent(in); err == nil {
			checkDecode(t, ev.Data)
			in = ev.Data
		}
		if msg := member(in, "message"); msg != nil {
			checkDecode(t, msg)
		}
		checkHeader(t, in)
		for _, c := range wireRewrites[:4] {
			checkRewrite(t, []byte(c[0]), in)
		}
		checkRewrite(t, in, in)
		if bytes.Count(in, []byte{0}) == 1 { // two documents
			a, b, _ := bytes.Cut(in, []byte{0})
			checkRewrite(t, a, b)
		}
	})
}
