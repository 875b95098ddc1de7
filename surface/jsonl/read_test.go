package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// K117: a session written to JSONL reloads with line 1 the header and the
// decoded events equal to the written ones.
func TestK117_ReloadEqualsWritten(t *testing.T) {
	evs := small(t).Events()
	path := writeSession(t, t.TempDir(), evs, 7)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)

	ls := lines(raw)
	var head map[string]any
	require.NoError(t, json.Unmarshal([]byte(ls[0]), &head))
	require.Equal(t, "session", head["type"])
	require.EqualValues(t, 3, head["version"])
	require.Equal(t, "s-1", head["id"])
	require.Equal(t, false, head["isSeeded"])
	require.Equal(t, "", ls[len(ls)-1], "the file ends in a newline")
	require.Len(t, ls, len(evs)+2)
	for i, e := range evs {
		require.Equal(t, string(surface.AppendEvent(nil, &e)), ls[i+1], "line %d holds seq %d", i+2, i)
	}

	ld, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, testHeader(), ld.Header)
	require.Zero(t, ld.Torn)
	require.Equal(t, int64(len(raw)), ld.Size)
	requireSameEvents(t, evs, ld.Log.Events())
	require.Equal(t, small(t).Nodes(), ld.Log.Nodes())
	require.Equal(t, small(t).ReplaceGeneration(), ld.Log.ReplaceGeneration())
	require.Equal(t, small(t).ContentGeneration(), ld.Log.ContentGeneration())

	h, got, torn, err := ReadEvents(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, testHeader(), h)
	require.Zero(t, torn)
	requireSameEvents(t, evs, got)
}

// K118: a final line without its newline is dropped and the preceding
// events load; an unparsable complete line refuses the load.
func TestK118_TornTailDroppedUnparsableLineRefused(t *testing.T) {
	evs := small(t).Events()[:400]
	file := encodeFile(t, testHeader(), evs)
	last := surface.AppendEvent(nil, &evs[len(evs)-1])
	body := file[:len(file)-len(last)-1] // without the last event's line

	t.Run("torn tail dropped", func(t *testing.T) {
		for _, tail := range [][]byte{
			last[:len(last)/2], // cut inside the line
			last,               // complete JSON, only the newline missing
			last[:1],
		} {
			data := append(bytes.Clone(body), tail...)
			ld, err := Read(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, int64(len(tail)), ld.Torn)
			require.Equal(t, int64(len(body)), ld.Size)
			requireSameEvents(t, evs[:len(evs)-1], ld.Log.Events())

			_, got, torn, err := ReadEvents(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, int64(len(tail)), torn)
			requireSameEvents(t, evs[:len(evs)-1], got)
		}
	})

	t.Run("unparsable complete line refused", func(t *testing.T) {
		n := 150 // replace the event with seq n (line n+2)
		tests := []struct {
			name string
			line string
			seq  int64
			want string
		}{
			{"garbage", "not json at all", -1, "not a JSON object"},
			{"cut object", string(surface.AppendEvent(nil, &evs[n]))[:40], int64(n), "not a JSON object"}, // the seq was read
			{"empty line", "", -1, "not a JSON object"},
			{"unknown envelope key", fmt.Sprintf(`{"type":"turn/start","seq":%d,"time":1,"data":{"turn":9},"extra":1}`, n), int64(n), "unknown envelope key"},
			{"wrong seq", strings.Replace(string(surface.AppendEvent(nil, &evs[n])), fmt.Sprintf(`"seq":%d`, n), `"seq":7`, 1), int64(n), "not contiguous"},
			{"not admitted", fmt.Sprintf(`{"type":"step/end","seq":%d,"time":1,"data":{"turn":999,"step":1}}`, n), int64(n), "enclosure"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ls := lines(file)
				ls[n+1] = tc.line
				data := []byte(strings.Join(ls, "\n"))
				for _, opts := range [][]Option{nil, {blockSize(4096), Workers(3)}} {
					_, err := Read(bytes.NewReader(data), opts...)
					var le *LineError
					require.ErrorAs(t, err, &le)
					require.Equal(t, n+2, le.Line)
					require.Equal(t, tc.seq, le.Seq)
					require.ErrorContains(t, err, fmt.Sprintf("line %d", n+2))
					require.ErrorContains(t, err, tc.want)
					var se *surface.Error
					require.ErrorAs(t, err, &se, "wraps the surface error")
				}
				if tc.name != "wrong seq" && tc.name != "not admitted" {
					_, _, _, err := ReadEvents(bytes.NewReader(data))
					var le *LineError
					require.ErrorAs(t, err, &le)
					require.Equal(t, n+2, le.Line)
				}
			})
		}
	})
}

// withSystem returns evs with the first request/header given the retired
// header.system member, and its index.
func withSystem(t *testing.T, evs []surface.Event) ([]surface.Event, int) {
	out := append([]surface.Event(nil), evs...)
	for i := range out {
		if out[i].Type == surface.TypeRequestHeader {
			d := bytes.Replace(out[i].Data, []byte(`{"header":{`), []byte(`{"header":{"system":"You are a v2 prompt.",`), 1)
			require.NotEqual(t, out[i].Data, d)
			out[i].Data = d
			return out, i
		}
	}
	t.Fatal("no request/header")
	return nil, 0
}

// K119: a request/header carrying header.system, on any line, or a header
// version newer than the build refuses the load; nothing is truncated.
func TestK119_RetiredShapeAndNewerVersionRefused(t *testing.T) {
	evs := small(t).Events()[:300]
	bad, i := withSystem(t, evs)
	complete := encodeFile(t, testHeader(), bad[:i+1])
	midFile := encodeFile(t, testHeader(), bad)
	tornFile := complete[:len(complete)-1] // the retired line is the torn tail

	newer := bytes.Replace(encodeFile(t, testHeader(), evs), []byte(`"version":3`), []byte(`"version":4`), 1)
	v2 := bytes.Replace(encodeFile(t, testHeader(), evs), []byte(`"version":3`), []byte(`"version":2`), 1)
	v1 := []byte(`{"type":"session","version":1,"id":"x","seedLength":3}` + "\n")

	tests := []struct {
		name string
		data []byte
		line int
		want string
	}{
		{"header.system mid-file", midFile, i + 2, "header.system"},
		{"header.system last line", complete, i + 2, "header.system"},
		{"header.system in the torn tail", tornFile, i + 2, "header.system"},
		{"retired replace keys in the torn tail", append(encodeFile(t, testHeader(), evs[:3]),
			`{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0,1]}`...), 5, "pre-v3 keys"},
		{"retired type in the torn tail", append(encodeFile(t, testHeader(), evs[:3]),
			`{"type":"request/header-delta","seq":3,"time":1,"data":{}}`...), 5, "retired event type"},
		{"newer version", newer, 0, "upgrade weir"},
		{"version 2", v2, 0, "v2 importer"},
		{"version 1", v1, 0, "not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))

			_, err := Load(path)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
			if tc.line > 0 {
				var le *LineError
				require.ErrorAs(t, err, &le)
				require.Equal(t, tc.line, le.Line)
			} else {
				var ve *VersionError
				require.ErrorAs(t, err, &ve)
				require.Equal(t, tc.name == "version 2", ve.Importable())
			}

			_, _, err = Open(path)
			require.ErrorContains(t, err, tc.want)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, tc.data, after, "a refused file is never truncated")

			_, _, _, err = ReadEvents(bytes.NewReader(tc.data))
			if tc.name == "header.system mid-file" || tc.name == "header.system last line" {
				require.NoError(t, err, "ReadEvents decodes without validating")
			} else {
				require.ErrorContains(t, err, tc.want)
			}
		})
	}

	// The version is checked before anything else of the header.
	_, err := Read(strings.NewReader(`{"type":"session","version":2,"id":7,"createdAt":"yesterday"}` + "\n"))
	var ve *VersionError
	require.ErrorAs(t, err, &ve)
	require.EqualValues(t, 2, ve.Version)
}

func TestTornTailTruncatedBeforeNextWrite(t *testing.T) {
	evs := small(t).Events()[:200]
	path := writeSession(t, t.TempDir(), evs[:150], 10)
	whole, err := os.ReadFile(path)
	require.NoError(t, err)
	torn := surface.AppendEvent(nil, &evs[150])
	torn = torn[:len(torn)-9]
	require.NoError(t, os.WriteFile(path, append(bytes.Clone(whole), torn...), 0o644))

	ld, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, int64(len(torn)), ld.Torn)
	st, _ := os.Stat(path)
	require.Equal(t, int64(len(whole)+len(torn)), st.Size(), "Load does not modify the file")

	s, log, err := Open(path, NoSync())
	require.NoError(t, err)
	require.Equal(t, int64(len(torn)), s.Torn())
	require.Equal(t, int64(150), log.NextSeq())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, whole, got, "Open truncates the torn tail")

	require.NoError(t, s.Append(evs[150:200]))
	require.NoError(t, s.Close())
	ld, err = Load(path)
	require.NoError(t, err)
	require.Zero(t, ld.Torn)
	requireSameEvents(t, evs, ld.Log.Events())
}

func TestLoadBlockBoundariesAndLongLines(t *testing.T) {
	l := surface.New(surface.WithClock(func() int64 { return 1_750_000_000_000 }))
	appendEv := func(typ, data string, op surface.Op) {
		_, err := l.Append(surface.Proposal{Type: typ, Data: []byte(data), Op: op, Ignorable: !surface.Known(typ)})
		require.NoError(t, err)
	}
	big := strings.Repeat("x\\\"y ", 1<<20) // a 6 MB string
	appendEv("turn/start", `{"turn":1}`, surface.Op{})
	appendEv("step/start", `{"turn":1,"step":1}`, surface.Op{})
	appendEv("user/message", `{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"`+big+`"}]}`, surface.Append)
	for k := range 200 {
		appendEv("user/message", fmt.Sprintf(`{"id":"u%d","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"%s"}]}`,
			k+2, strings.Repeat("ab", k*37)), surface.Append)
	}
	appendEv("session/title", `{"title":"kept verbatim"}`, surface.Op{})
	evs := l.Events()
	file := encodeFile(t, testHeader(), evs)
	opaque := bytes.Replace(file, []byte(`"data":{"title":"kept verbatim"},"ignorable":true}`), []byte(`"data":{"title":"kept verbatim"},"ignorable":true,"x-opaque":[1]}`), 1)
	require.NotEqual(t, file, opaque)
	file = opaque

	var want []surface.Event
	for _, opts := range [][]Option{
		nil,
		{Workers(1)},
		{blockSize(4096), Workers(1)},
		{blockSize(4096), Workers(4)},
		{blockSize(100_000), Workers(2)},
	} {
		ld, err := Read(bytes.NewReader(file), opts...)
		require.NoError(t, err)
		require.Equal(t, int64(len(file)), ld.Size)
		if want == nil {
			want = ld.Log.Events()
			require.Len(t, want, len(evs))
			raw, ok := want[len(want)-1].Verbatim()
			require.True(t, ok)
			require.Contains(t, string(raw), `"x-opaque":[1]`)
		}
		requireSameEvents(t, want, ld.Log.Events())
	}
	_, got, torn, err := ReadEvents(bytes.NewReader(file))
	require.NoError(t, err)
	require.Zero(t, torn)
	requireSameEvents(t, want, got)
}

func TestHeaderFields(t *testing.T) {
	full := Header{ID: "s-9", CreatedAt: 1_760_000_000_123, Cwd: "/w", ParentSession: "s-8", IsSeeded: true,
		Origin: "subagent", DelegationDepth: 2, AgentPreset: jsontext.Value(`{"name":"review"}`),
		Extra: jsontext.Value(`{"future":{"a":[1,2]},"z":"last"}`)}
	line, err := appendHeader(nil, &full)
	require.NoError(t, err)
	require.Equal(t, `{"type":"session","version":3,"id":"s-9","createdAt":1760000000123,"cwd":"/w","parentSession":"s-8",`+
		`"isSeeded":true,"origin":"subagent","delegationDepth":2,"agentPreset":{"name":"review"},"future":{"a":[1,2]},"z":"last"}`, string(line))
	h, err := parseHeader(line, "")
	require.NoError(t, err)
	require.Equal(t, full, h)

	// A header written by another writer: unknown members are kept, an RFC
	// 3339 createdAt is read as epoch milliseconds.
	h, err = parseHeader([]byte(`{"type":"session","version":3,"id":"a","createdAt":"2025-06-15T12:00:00.5Z","isSeeded":false,"title":"t"}`), "")
	require.NoError(t, err)
	require.Equal(t, int64(1749988800500), h.CreatedAt)
	require.Equal(t, `{"title":"t"}`, string(h.Extra))

	for _, tc := range []struct{ line, want string }{
		{`[]`, "not a JSON object"},
		{`{"type":"event","version":3,"id":"a"}`, `"type" must be "session"`},
		{`{"type":"session","id":"a"}`, `"version" must be an integer`},
		{`{"type":"session","version":3}`, `"id" must be a non-empty string`},
		{`{"type":"session","version":3,"id":"a","isSeeded":1}`, `"isSeeded" must be a boolean`},
		{`{"type":"session","version":3,"id":"a","delegationDepth":-1}`, `"delegationDepth"`},
		{`{"type":"session","version":3,"id":"a","id":"b"}`, `duplicate`},
	} {
		_, err := parseHeader([]byte(tc.line), "f")
		require.ErrorContains(t, err, tc.want, tc.line)
		var le *LineError
		require.ErrorAs(t, err, &le)
		require.Equal(t, 1, le.Line)
	}
	for _, h := range []Header{{}, {ID: "a", Extra: jsontext.Value(`{"id":"dup"}`)}, {ID: "a", Extra: jsontext.Value(`[1]`)},
		{ID: "a", AgentPreset: jsontext.Value(`{bad`)}} {
		_, err := appendHeader(nil, &h)
		require.Error(t, err)
	}
}

func TestEmptyAndHeaderOnlyFiles(t *testing.T) {
	_, err := Read(strings.NewReader(""))
	require.ErrorContains(t, err, "empty file")
	_, err = Read(strings.NewReader(`{"type":"session","version":3,"id":"a"`))
	require.ErrorContains(t, err, "header lacks its newline")
	ld, err := Read(strings.NewReader(`{"type":"session","version":3,"id":"a","createdAt":1,"isSeeded":false}` + "\n"))
	require.NoError(t, err)
	require.Zero(t, ld.Log.Len())
	_, _, _, err = ReadEvents(strings.NewReader(""))
	require.ErrorContains(t, err, "empty file")
}

type failingReader struct {
	r   *bytes.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil {
		return n, f.err
	}
	return n, nil
}

func TestReadErrorIsReported(t *testing.T) {
	file := encodeFile(t, testHeader(), small(t).Events()[:500])
	boom := errors.New("disk on fire")
	_, err := Read(&failingReader{r: bytes.NewReader(file), err: boom}, blockSize(4096))
	require.ErrorIs(t, err, boom)
	_, _, _, err = ReadEvents(&failingReader{r: bytes.NewReader(file), err: boom})
	require.ErrorIs(t, err, boom)
}

// The first invalid line refuses the load, whether it fails to decode or
// fails admission, wherever the block boundaries fall.
func TestFirstInvalidLineWins(t *testing.T) {
	evs := small(t).Events()[:300]
	notAdmitted := func(seq int) string {
		return fmt.Sprintf(`{"type":"step/end","seq":%d,"time":1,"data":{"turn":999,"step":1}}`, seq)
	}
	for _, tc := range []struct {
		name      string
		bad       map[int]string // seq -> line
		line      int
		wantRule  surface.Rule
		wantInMsg string
	}{
		{"admission error first", map[int]string{40: notAdmitted(40), 200: "garbage"}, 42, surface.RuleEnclosure, "turn 999"},
		{"decode error first", map[int]string{40: "garbage", 200: notAdmitted(200)}, 42, surface.RuleEnvelope, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := lines(encodeFile(t, testHeader(), evs))
			for seq, l := range tc.bad {
				ls[seq+1] = l
			}
			data := []byte(strings.Join(ls, "\n"))
			for _, opts := range [][]Option{nil, {blockSize(4096), Workers(3)}, {Workers(1)}} {
				_, err := Read(bytes.NewReader(data), opts...)
				var le *LineError
				require.ErrorAs(t, err, &le)
				require.Equal(t, tc.line, le.Line)
				require.Equal(t, tc.wantRule, surface.RuleOf(err))
				require.ErrorContains(t, err, tc.wantInMsg)
			}
		})
	}
}
