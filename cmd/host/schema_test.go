package cli

import (
	"bufio"
	stdjson "encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"
)

// The JSON Schemas of docs/schemas describe every line of a session log.
// These tests hold them to the logs the host really writes: the committed
// samples, a fresh demo, and the logs of the tests that exercise
// third-party compaction, pruning, plugin failures and plugin calls.

const schemaBase = "https://github.com/weirhost/weir/docs/schemas/"

var (
	logSchemaOnce sync.Once
	logSchema     *jsonschema.Resolved
	logSchemaErr  error
)

// eventSchema resolves docs/schemas/event.schema.json with the schemas it
// references (read from the same folder by their $id), once per test run.
func eventSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	logSchemaOnce.Do(func() {
		dir := filepath.Join(repoRoot(t), "docs", "schemas")
		read := func(name string) (*jsonschema.Schema, error) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			var s jsonschema.Schema
			if err := stdjson.Unmarshal(b, &s); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return &s, nil
		}
		root, err := read("event.schema.json")
		if err != nil {
			logSchemaErr = err
			return
		}
		logSchema, logSchemaErr = root.Resolve(&jsonschema.ResolveOptions{Loader: func(u *url.URL) (*jsonschema.Schema, error) {
			name, ok := strings.CutPrefix(u.String(), schemaBase)
			if !ok || strings.Contains(name, "/") {
				return nil, fmt.Errorf("schema %s is not one of docs/schemas", u)
			}
			return read(name)
		}})
	})
	require.NoError(t, logSchemaErr, "docs/schemas does not resolve")
	return logSchema
}

// lineErr validates one log line against the event schema.
func lineErr(t *testing.T, line string) error {
	var v any
	require.NoError(t, stdjson.Unmarshal([]byte(line), &v), line)
	return eventSchema(t).Validate(v)
}

// requireLogMatchesSchemas checks every line of the log at path and
// returns the event types it saw.
func requireLogMatchesSchemas(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	types := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		if err := lineErr(t, line); err != nil {
			require.NoError(t, err, "%s line %d does not match docs/schemas/event.schema.json:\n%.400s", filepath.Base(path), n, line)
		}
		var head struct{ Type string }
		_ = stdjson.Unmarshal([]byte(line), &head)
		types[head.Type]++
	}
	require.NoError(t, sc.Err())
	return types
}

func TestSampleLogsMatchTheSchemas(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "examples", "sessions", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		requireLogMatchesSchemas(t, f)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "demo.jsonl")
	r := runHost(t, dir, "", "demo", "--out", file)
	require.Equal(t, 0, r.code, r.stderr)
	types := requireLogMatchesSchemas(t, file)
	for _, typ := range []string{"session", "system/message", "user/message", "assistant/message", "tool/call", "tool/result",
		"compaction/start", "compaction/summary", "compaction/end", "plugin/call", "request/header", "request/context"} {
		require.Positive(t, types[typ], "the demo writes %s, so the schema is tested against it", typ)
	}
}

// TestSchemasRefuseWhatAdmissionRefuses: the schemas are not permissive
// placeholders; each line below breaks one documented shape rule.
func TestSchemasRefuseWhatAdmissionRefuses(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"checkpoint": `{"type":"user/message","seq":9,"time":0,"data":{"id":"c","role":"user","source":{"kind":"plugin","plugin":"p","compactionId":"x"},"content":[{"type":"text","text":"s"}]},"surfaceOp":{"op":"replace","startSeq":3,"endSeq":5},"sourceEventSeqs":[7,8,3,4,5]}`,
		"rewrite":    `{"type":"tool/result","seq":9,"time":0,"data":{"turn":1,"step":1,"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"[pruned]"}]}]}},"surfaceOp":{"op":"replace","startSeq":4,"endSeq":4},"sourceEventSeqs":[4]}`,
		"start":      `{"type":"compaction/start","seq":7,"time":0,"data":{"compactionId":"x","turn":null}}`,
		"summary":    `{"type":"compaction/summary","seq":8,"time":0,"data":{"compactionId":"x","summary":"s","shadowedSeqs":[3,4,5],"shadowedRange":{"start":3,"end":5},"shadowedTokenCount":40}}`,
		"end":        `{"type":"compaction/end","seq":10,"time":0,"data":{"compactionId":"x","tokensBefore":100,"tokensAfter":60}}`,
		"prune":      `{"type":"compaction/prune","seq":10,"time":0,"data":{"shadowedSeqs":[4],"bytes":1200}}`,
		"failure":    `{"type":"plugin/failure","seq":10,"time":0,"data":{"plugin":"p","kind":"compaction","error":"..."},"ignorable":true}`,
		"declared":   `{"type":"pruner/stats","seq":10,"time":0,"data":{"n":1},"ignorable":true}`,
		"state":      `{"type":"plugin/state","seq":10,"time":0,"data":{"plugin":"p","module":"` + strings.Repeat("0f", 32) + `","state":"e30="},"ignorable":true}`,
	}
	for name, line := range good {
		require.NoError(t, lineErr(t, line), name)
	}
	bad := map[string]string{
		"checkpoint without plugin":        `{"type":"user/message","seq":9,"time":0,"data":{"id":"c","role":"user","source":{"kind":"plugin"},"content":[]},"surfaceOp":"append"}`,
		"message without id":               `{"type":"user/message","seq":9,"time":0,"data":{"role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append"}`,
		"tool result with two blocks":      `{"type":"tool/result","seq":9,"time":0,"data":{"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[]},{"type":"text","text":"x"}]}},"surfaceOp":"append"}`,
		"tool-result without toolCallId":   `{"type":"tool/result","seq":9,"time":0,"data":{"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","content":[]}]}},"surfaceOp":"append"}`,
		"tool-call without id":             `{"type":"assistant/message","seq":9,"time":0,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"tool-call","name":"f","arguments":"{}"}]}},"surfaceOp":"append"}`,
		"empty sourceEventSeqs":            `{"type":"user/message","seq":9,"time":0,"data":{"id":"c","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append","sourceEventSeqs":[]}`,
		"replace without endSeq":           `{"type":"user/message","seq":9,"time":0,"data":{"id":"c","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":{"op":"replace","startSeq":3}}`,
		"summary with empty shadowedSeqs":  `{"type":"compaction/summary","seq":8,"time":0,"data":{"compactionId":"x","shadowedSeqs":[]}}`,
		"summary with repeated seqs":       `{"type":"compaction/summary","seq":8,"time":0,"data":{"compactionId":"x","shadowedSeqs":[3,3]}}`,
		"count above 2^40":                 `{"type":"compaction/end","seq":10,"time":0,"data":{"compactionId":"x","tokensBefore":1099511627777}}`,
		"fractional count":                 `{"type":"compaction/end","seq":10,"time":0,"data":{"compactionId":"x","tokensAfter":1.5}}`,
		"compactionId with a control byte": `{"type":"compaction/start","seq":7,"time":0,"data":{"compactionId":"a\nb"}}`,
		"surfaceOp on a log-only event":    `{"type":"compaction/start","seq":7,"time":0,"data":{"compactionId":"x"},"surfaceOp":"append"}`,
		"header carrying a system prompt":  `{"type":"request/header","seq":4,"time":0,"data":{"header":{"config":{"provider":"p","model":"m"},"system":"x"},"reason":"initial"}}`,
		"header with an unknown reason":    `{"type":"request/header","seq":4,"time":0,"data":{"header":{"config":{"provider":"p","model":"m"}},"reason":"whim"}}`,
		"plugin/failure not ignorable":     `{"type":"plugin/failure","seq":10,"time":0,"data":{"plugin":"p","kind":"compaction","error":"..."},"ignorable":false}`,
		"plugin/state without a module":    `{"type":"plugin/state","seq":10,"time":0,"data":{"plugin":"p","module":"v2","state":""},"ignorable":true}`,
		"plugin/state on the surface":      `{"type":"plugin/state","seq":10,"time":0,"data":{"plugin":"p","module":"` + strings.Repeat("0f", 32) + `","state":""},"ignorable":true,"surfaceOp":"append"}`,
	}
	for name, line := range bad {
		require.Error(t, lineErr(t, line), name)
	}
}
