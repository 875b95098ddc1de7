package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/eval"
)

// The screenshots in docs/images (serve-NAME.png) are taken by the browser
// tests. With WEIR_DOCS_IMAGES=1 those tests write them there and record,
// in docs/images/serve-screenshots.json, what each was taken of: its
// fixture, the pages the browser loaded for it and a hash of what the
// server answered for them (the stylesheet and the script included), with
// the PNG's own hash. TestScreenshotsAreCurrent, which needs no browser,
// serves the same fixtures again and fails when a page a screenshot shows
// has changed since it was taken.

// retakeCommand retakes the documentation's screenshots.
const retakeCommand = "WEIR_DOCS_IMAGES=1 CI=true go test -run 'TestBrowser(Demo|BigViews)$' ./host/inspect/"

// shotsDir is docs/images, from this package's folder.
var shotsDir = filepath.Join("..", "..", "docs", "images")

const manifestName = "serve-screenshots.json"

// Shot is one screenshot's line in the manifest.
type Shot struct {
	// Fixture names the sessions served (see shotFixture).
	Fixture string `json:"fixture"`
	// Pages are the paths the browser loaded for it, in order.
	Pages []string `json:"pages"`
	// Inputs is the SHA-256 of what the server answered for Pages and for
	// the stylesheet and the script; PNG the image's.
	Inputs string `json:"inputs"`
	PNG    string `json:"png"`
}

// shotFixture returns the server options of a named fixture, its files
// written in the test's temporary folders: "demo" (the demo session and a
// copy with a long name, priced with eval's default table) or "big" (the
// demo with a 5 MB tool result as big.jsonl, and a session of 2,300 events
// as big.jsonl~2).
func shotFixture(t testing.TB, name string) Options {
	t.Helper()
	switch name {
	case "demo":
		long := copyDemo(t, t.TempDir(), strings.Repeat("a-session-with-a-long-name-", 6)+"demo.jsonl")
		return Options{Files: []string{demoPath(t), long}, Prices: &eval.DeepSeekPrices}
	case "big":
		path := copyDemo(t, t.TempDir(), "big.jsonl")
		appendToolTurn(t, path, bigResult(5<<20))
		return Options{Files: []string{path, bigSession(t, t.TempDir(), 2300)}}
	}
	t.Fatalf("no screenshot fixture %q", name)
	return Options{}
}

// inputsHash hashes what fetch answers for pages and the static files.
func inputsHash(t testing.TB, fetch func(path string) string, pages []string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range append(slices.Clone(pages), "/static/style.css", "/static/app.js") {
		body := fetch(p)
		fmt.Fprintf(h, "%s %d\n", p, len(body))
		io.WriteString(h, body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var manifestMu sync.Mutex

// recordShot writes a screenshot the docs show, and its manifest line,
// when WEIR_DOCS_IMAGES=1; base is the address of the server it was taken
// from.
func recordShot(t *testing.T, base, fixture, name string, png []byte, pages ...string) {
	t.Helper()
	if os.Getenv("WEIR_DOCS_IMAGES") != "1" {
		return
	}
	fetch := func(p string) string {
		res, err := http.Get(base + p)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, p)
		return string(b)
	}
	shot := Shot{Fixture: fixture, Pages: pages, Inputs: inputsHash(t, fetch, pages), PNG: sum(png)}
	manifestMu.Lock()
	defer manifestMu.Unlock()
	m := readManifest(t)
	m["serve-"+name] = shot
	require.NoError(t, os.WriteFile(filepath.Join(shotsDir, "serve-"+name), png, 0o644))
	b, err := json.Marshal(m, json.Deterministic(true))
	require.NoError(t, err)
	require.NoError(t, (*jsontext.Value)(&b).Indent(jsontext.WithIndent("  ")))
	require.NoError(t, os.WriteFile(filepath.Join(shotsDir, manifestName), append(b, '\n'), 0o644))
	t.Logf("docs screenshot %s", filepath.Join(shotsDir, "serve-"+name))
}

func readManifest(t testing.TB) map[string]Shot {
	t.Helper()
	m := map[string]Shot{}
	b, err := os.ReadFile(filepath.Join(shotsDir, manifestName))
	if os.IsNotExist(err) {
		return m
	}
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m), manifestName)
	return m
}

// TestScreenshotsAreCurrent fails when a committed screenshot shows a page
// that has changed since it was taken, or is not the image that was taken.
func TestScreenshotsAreCurrent(t *testing.T) {
	if os.Getenv("WEIR_DOCS_IMAGES") == "1" {
		t.Skip("the screenshots are being retaken")
	}
	m := readManifest(t)
	pngs, err := filepath.Glob(filepath.Join(shotsDir, "serve-*.png"))
	require.NoError(t, err)
	require.NotEmpty(t, pngs)
	for _, p := range pngs {
		_, ok := m[filepath.Base(p)]
		require.True(t, ok, "docs/images/%s is in no line of docs/images/%s: retake the screenshots with %s", filepath.Base(p), manifestName, retakeCommand)
	}
	servers := map[string]*Server{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		shot := m[name]
		png, err := os.ReadFile(filepath.Join(shotsDir, name))
		require.NoError(t, err, "docs/images/%s is in the manifest but missing: retake the screenshots with %s", name, retakeCommand)
		require.Equal(t, shot.PNG, sum(png), "docs/images/%s is not the image the screenshot run took: retake the screenshots with %s", name, retakeCommand)
		s := servers[shot.Fixture]
		if s == nil {
			s = newServer(t, shotFixture(t, shot.Fixture))
			t.Cleanup(s.Close)
			servers[shot.Fixture] = s
		}
		got := inputsHash(t, func(p string) string { return ok(t, s, p) }, shot.Pages)
		require.Equal(t, shot.Inputs, got, "docs/images/%s is stale: a page it shows (%s, or the stylesheet or script) changed since it was taken; retake the screenshots with %s",
			name, strings.Join(shot.Pages, ", "), retakeCommand)
	}
}
