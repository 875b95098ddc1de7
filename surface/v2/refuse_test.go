package v2

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// open returns a log with turn 1 step 1 open, a user message and a header
// recording prompt P: seqs 0..3 on lines 2..5.
func open(id string) *logBuilder {
	b := newLog(id)
	b.turnStart()
	b.stepStart()
	b.user("u1", "hi")
	b.header(ptr("P"), "initial", "chat", "")
	return b
}

func withLine(b *logBuilder, line string) []byte {
	b.line(line)
	return b.bytes()
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		name string
		in   func() []byte
		c    Case
		line int // 0: the refusal names no line
		msg  string
	}{
		{"not JSON", func() []byte { return withLine(open("s"), `{"type":"step/end","seq":4,`) }, CaseMalformed, 6, "not one JSON object"},
		{"not an object", func() []byte { return withLine(open("s"), `[1,2]`) }, CaseMalformed, 6, "not a JSON object"},
		{"blank line", func() []byte { return withLine(open("s"), ``) }, CaseMalformed, 6, "blank line"},
		{"seq gap", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":9,"time":1,"data":{"turn":1,"step":1}}`)
		}, CaseMalformed, 6, "seq 9 does not continue the log: expected seq 4"},
		{"empty type", func() []byte { return withLine(open("s"), `{"type":"","seq":4,"time":1,"data":{},"ignorable":true}`) }, CaseMalformed, 6, "type is empty"},
		{"missing time", func() []byte { return withLine(open("s"), `{"type":"step/end","seq":4,"data":{"turn":1,"step":1}}`) }, CaseMalformed, 6, "missing time"},
		{"missing data", func() []byte { return withLine(open("s"), `{"type":"step/end","seq":4,"time":1}`) }, CaseMalformed, 6, "missing data"},
		{"unknown envelope key", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":4,"time":1,"data":{"turn":1,"step":1},"meta":1}`)
		}, CaseMalformed, 6, `unknown envelope key "meta"`},
		{"ignorable false", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":4,"time":1,"data":{"turn":1,"step":1},"ignorable":false}`)
		}, CaseMalformed, 6, "ignorable must be exactly true"},
		{"negative zero", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":4,"time":1,"data":{"turn":1,"step":-0.0}}`)
		}, CaseMalformed, 6, "-0"},
		{"duplicate key", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":4,"time":1,"data":{"turn":1,"turn":1,"step":1}}`)
		}, CaseMalformed, 6, "duplicate"},
		{"system not a string", func() []byte {
			b := newLog("s")
			b.turnStart()
			b.stepStart()
			b.raw("request/header", `{"header":{"config":{"provider":"p","model":"m"},"system":[{"type":"text","text":"P"}]},"reason":"initial"}`, "")
			return b.bytes()
		}, CaseMalformed, 4, "header.system must be a string"},
		{"invalid header", func() []byte {
			b := newLog("s")
			b.turnStart()
			b.stepStart()
			b.raw("request/header", `{"header":{"config":{"provider":"p","model":"m"},"system":"P"},"reason":"fallback"}`, "")
			return b.bytes()
		}, CaseMalformed, 4, `reason "fallback"`},
		{"message without id", func() []byte {
			return withLine(open("s"), `{"type":"user/message","seq":4,"time":1,"data":{"role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append"}`)
		}, CaseMalformed, 6, "message id must be a non-empty string"},
		{"step without numbers", func() []byte {
			b := newLog("s")
			b.turnStart()
			b.raw("step/start", `{"turn":1}`, "")
			return b.bytes()
		}, CaseMalformed, 3, "step/start needs integer data.turn and data.step"},
		{"source names a later event", func() []byte {
			return withLine(open("s"), `{"type":"user/message","seq":4,"time":1,"data":`+userMsg("u2", "x")+`,"surfaceOp":"append","sourceEventSeqs":[4]}`)
		}, CaseMalformed, 6, "not an earlier event"},
		{"shadowedSeqs names a later event", func() []byte {
			return withLine(open("s"), `{"type":"compaction/summary","seq":4,"time":1,"data":{"compactionId":"c","shadowedSeqs":[2,7],"shadowedRange":{"start":2,"end":7}}}`)
		}, CaseMalformed, 6, "shadowedSeqs element 7 does not name an earlier event"},
		{"no header line", func() []byte { return []byte(`{"type":"session","version":2,"id":"s"}`) }, CaseMalformed, 0, "no complete header line"},
		{"header without id", func() []byte { return []byte(`{"type":"session","version":2}` + "\n") }, CaseMalformed, 1, "lacks id"},
		{"header createdAt", func() []byte { return []byte(`{"type":"session","version":2,"id":"s","createdAt":"yesterday"}` + "\n") }, CaseMalformed, 1, "createdAt must be epoch milliseconds or an RFC 3339 time"},
		{"header isSeeded", func() []byte { return []byte(`{"type":"session","version":2,"id":"s","isSeeded":"no"}` + "\n") }, CaseMalformed, 1, "isSeeded must be a boolean"},
		{"header not a session", func() []byte { return []byte(`{"type":"turn/start","version":2,"id":"s"}` + "\n") }, CaseMalformed, 1, `type must be "session"`},

		{"already v3", func() []byte { return []byte(`{"type":"session","version":3,"id":"s"}` + "\n") }, CaseVersion, 1, "already format v3"},
		{"newer than v3", func() []byte { return []byte(`{"type":"session","version":4,"id":"s"}` + "\n") }, CaseVersion, 1, "newer than this build"},
		{"older than v2", func() []byte { return []byte(`{"type":"session","version":1,"id":"s"}` + "\n") }, CaseVersion, 1, "predates v2"},

		{"unclassified type", func() []byte { return withLine(open("s"), `{"type":"todo/write","seq":4,"time":1,"data":{}}`) }, CaseUnclassified, 6, `"todo/write" is not one the converter classifies`},
		{"retired chunk", func() []byte {
			return withLine(open("s"), `{"type":"assistant/chunk","seq":4,"time":1,"data":{"turn":1,"step":1}}`)
		}, CaseUnclassified, 6, "removed in format v2"},

		{"system/message in v2", func() []byte {
			return withLine(open("s"), `{"type":"system/message","seq":4,"time":1,"data":{"turn":1,"step":1,"message":{"id":"x","role":"system","source":{"kind":"plugin","plugin":"p"},"content":[]}},"surfaceOp":"append"}`)
		}, CaseV3Shape, 6, "exist only in format v3"},
		{"migratedFrom header", func() []byte { return []byte(`{"type":"session","version":2,"id":"s","migratedFrom":2}` + "\n") }, CaseV3Shape, 1, "migratedFrom"},

		{"v3 replace keys", func() []byte {
			return withLine(open("s"), `{"type":"user/message","seq":4,"time":1,"data":`+userMsg("c", "x")+`,"surfaceOp":{"op":"replace","startSeq":2,"endSeq":2},"sourceEventSeqs":[2]}`)
		}, CaseV3ReplaceKeys, 6, "uses the v3 key names startSeq/endSeq"},

		{"surfaceOp on log-only", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":4,"time":1,"data":{"turn":1,"step":1},"surfaceOp":"append"}`)
		}, CaseSurfaceKeys, 6, "log-only event carries surfaceOp"},
		{"sources on log-only", func() []byte {
			return withLine(open("s"), `{"type":"step/end","seq":4,"time":1,"data":{"turn":1,"step":1},"sourceEventSeqs":[1]}`)
		}, CaseSurfaceKeys, 6, "log-only event carries sourceEventSeqs"},

		{"replace off the surface", func() []byte {
			return withLine(open("s"), `{"type":"user/message","seq":4,"time":1,"data":`+userMsg("c", "x")+`,"surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2]}`)
		}, CaseFold, 6, "replace start seq 1 is not on the surface"},
		{"replace missing a citation", func() []byte {
			b := open("s")
			b.assistant("a1", "r")
			return withLine(b, `{"type":"user/message","seq":5,"time":1,"data":`+userMsg("c", "x")+`,"surfaceOp":{"op":"replace","start":2,"end":4},"sourceEventSeqs":[2]}`)
		}, CaseFold, 7, "missing [4]"},
		{"reversed replace", func() []byte {
			b := open("s")
			b.assistant("a1", "r")
			return withLine(b, `{"type":"user/message","seq":5,"time":1,"data":`+userMsg("c", "x")+`,"surfaceOp":{"op":"replace","start":4,"end":2},"sourceEventSeqs":[2,4]}`)
		}, CaseFold, 7, "is after end seq 2"},

		{"assistant replacement", func() []byte {
			b := open("s")
			b.assistant("a1", "r")
			return withLine(b, `{"type":"assistant/message","seq":5,"time":1,"data":{"turn":1,"step":1,"message":{"id":"a2","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[]}},"surfaceOp":{"op":"replace","start":4,"end":4},"sourceEventSeqs":[4]}`)
		}, CaseInexpressible, 7, "assistant/message replacement has no v3 form"},

		{"id collision", func() []byte {
			b := newLog("s-x")
			b.turnStart()
			b.stepStart()
			b.user("v2-sys-s-x-2", "I took the head's id")
			b.header(ptr("P"), "initial", "chat", "")
			return b.bytes()
		}, CaseIDCollision, 4, `"v2-sys-s-x-2" is already used here; it is the id generated for the system/message that the request/header at line 5 needs`},

		{"compaction covers node 0", func() []byte {
			b := newLog("s")
			b.turnStart()
			b.stepStart()
			u1 := b.user("u1", "hi")
			b.stepEnd()
			b.raw("turn/end", `{"turn":1,"reason":{"kind":"error","error":{"message":"x","code":"UNKNOWN"}}}`, "")
			b.turnStart()
			b.compact("c1", u1, u1, u1)
			b.stepStart() // seq 10, line 12
			b.user("u2", "again")
			b.header(ptr("P"), "initial", "chat", "") // line 14
			return b.bytes()
		}, CaseHeadTaken, 14, "1 surface node(s) already precede its step (step/start at line 12)"},
		{"history before the first prompt", func() []byte {
			b := newLog("s")
			b.turnStart()
			b.stepStart()
			b.user("u1", "hi")
			b.stepEnd()
			b.stepStart()
			b.header(nil, "initial", "chat", "") // line 7
			return b.bytes()
		}, CaseHeadTaken, 7, "must become surface node 0"},

		{"prompt change between steps", func() []byte {
			b := open("s")
			b.assistant("a1", "r")
			b.stepEnd()
			b.header(ptr("P2"), "change", "chat", "") // seq 6, line 8
			return b.bytes()
		}, CaseOutsideStep, 8, "records a prompt change outside any open step"},
		{"first prompt outside a step", func() []byte {
			b := newLog("s")
			b.turnStart()
			b.header(ptr("P"), "initial", "chat", "")
			return b.bytes()
		}, CaseOutsideStep, 3, "records the first recorded prompt outside any open step"},

		{"fails v3 admission", func() []byte {
			b := open("s")
			return withLine(b, `{"type":"tool/result","seq":4,"time":1,"data":`+toolResultData(1, 1, "r", "call-9", "x")+`,"surfaceOp":"append"}`)
		}, CaseV3Admission, 6, `tool/result "call-9" answers no pending tool/call`},
		{"fails v3 payload rules", func() []byte {
			b := open("s")
			return withLine(b, `{"type":"assistant/message","seq":4,"time":1,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","source":{"kind":"user"},"content":[]}},"surfaceOp":"append"}`)
		}, CaseV3Admission, 6, "assistant message source must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.v2.jsonl")
			src := tc.in()
			require.NoError(t, os.WriteFile(in, src, 0o600))
			out := filepath.Join(dir, "out.v3.jsonl")
			err := ConvertFile(in, out)
			require.Error(t, err)
			require.Equal(t, tc.c, CaseOf(err), err.Error())
			require.Contains(t, err.Error(), tc.msg)
			if tc.line > 0 {
				require.Regexp(t, fmt.Sprintf(`^v2 line %d[ :]`, tc.line), err.Error())
				var e *Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, tc.line, e.Line)
			} else {
				require.NotContains(t, err.Error(), "v2 line")
			}
			require.NoFileExists(t, out)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file is left behind")
			after, err := os.ReadFile(in)
			require.NoError(t, err)
			require.Equal(t, src, after, "the input is never modified")
		})
	}
}

func TestConvertFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "session.v2.jsonl")
	b := open("s-file")
	b.assistant("a1", "r")
	b.stepEnd()
	b.turnEnd()
	src := b.bytes()
	require.NoError(t, os.WriteFile(in, src, 0o640))
	out := filepath.Join(dir, "session.v3.jsonl")
	require.NoError(t, ConvertFile(in, out))

	want := convertChecked(t, src).out
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	info, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the output keeps the input's permissions")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temporary file is left behind")

	// An existing output is refused and left alone...
	require.NoError(t, os.WriteFile(out, []byte("keep me\n"), 0o600))
	err = ConvertFile(in, out)
	require.Equal(t, CaseOutput, CaseOf(err))
	require.Contains(t, err.Error(), "already exists")
	kept, _ := os.ReadFile(out)
	require.Equal(t, "keep me\n", string(kept))
	// ...unless overwriting is asked for.
	require.NoError(t, ConvertFile(in, out, Overwrite()))
	got, _ = os.ReadFile(out)
	require.Equal(t, string(want), string(got))

	// The input is never the output, even with overwriting.
	err = ConvertFile(in, in, Overwrite())
	require.Equal(t, CaseOutput, CaseOf(err))
	require.Contains(t, err.Error(), "is the input file")
	after, _ := os.ReadFile(in)
	require.Equal(t, src, after)

	// A missing input is an I/O error, not a refusal.
	err = ConvertFile(filepath.Join(dir, "absent.jsonl"), filepath.Join(dir, "x.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, Case(""), CaseOf(err))
}

func TestReadErrorsNameTheLine(t *testing.T) {
	// Read alone validates: the error names the line and the seq.
	_, err := Read(bytes.NewReader(withLine(open("s"), `{"type":"step/end","seq":4,"time":"x","data":{}}`)))
	require.EqualError(t, err, `v2 line 6 (seq 4, step/end): refused (malformed): time "x" is not an integer`)
	require.True(t, strings.HasPrefix(err.Error(), "v2 line 6"))
}

func TestHugeSourceRunIsRefusedQuickly(t *testing.T) {
	in := withLine(open("s"), `{"type":"user/message","seq":4,"time":1,"data":`+userMsg("u2", "x")+`,"surfaceOp":"append","sourceEventSeqs":[[0,9007199254740991]]}`)
	_, err := Convert(bytes.NewReader(in))
	require.Equal(t, CaseMalformed, CaseOf(err))
	require.Contains(t, err.Error(), "v2 line 6 (seq 4, user/message)")
	require.Contains(t, err.Error(), "which is not an earlier event")
}

func TestNegativeZero(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":-0}`: true, `{"a":-0.0}`: true, `{"a":-0e5}`: true, `{"a":[1,-0.000]}`: true,
		`{"a":1e-0}`: false, `{"a":1E-00}`: false, `{"a":-0.01}`: false, `{"a":"-0"}`: false,
		`{"a":"\"-0"}`: false, `{"a":-10}`: false, `{"a":2.5e-3}`: false,
	} {
		require.Equal(t, want, negativeZero([]byte(in)), in)
	}
}
