package inspect

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The browser tests drive headless Chromium (Debian's chromium package)
// over the DevTools protocol (cdp_test.go): one browser for the package's
// run, a new tab per test. Without Chromium they skip, except under
// CI=true, where they fail. Screenshots go to $WEIR_SCREENSHOTS when set,
// else to the test's temporary folder.

var chromium struct {
	once sync.Once
	path string
	b    *cdpBrowser
	dir  string // the profile and the browser's TMPDIR, removed at exit
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.b != nil {
		chromium.b.close()
	}
	if chromium.dir != "" {
		_ = os.RemoveAll(chromium.dir)
	}
	os.Exit(code)
}

// startChromium starts the package's browser on first use.
func startChromium() {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium.path = p
			break
		}
	}
	if chromium.path == "" {
		return
	}
	// Chromium writes files of its own (org.chromium.Chromium.*) to
	// TMPDIR: give it one inside the folder removed at exit.
	chromium.dir, chromium.err = os.MkdirTemp("", "weir-inspect-chromium-")
	if chromium.err != nil {
		return
	}
	profile, tmp := filepath.Join(chromium.dir, "profile"), filepath.Join(chromium.dir, "tmp")
	if chromium.err = os.Mkdir(tmp, 0o700); chromium.err != nil {
		return
	}
	env := append(os.Environ(), "TMPDIR="+tmp)
	chromium.b, chromium.err = startBrowser(chromium.path, []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--disable-extensions", "--disable-default-apps",
		"--force-color-profile=srgb", "--hide-scrollbars", "--window-size=1100,820",
		"--user-data-dir=" + profile, "about:blank",
	}, env)
}

// browser opens a tab of the package's headless Chromium for one test and
// returns it with a counter of JavaScript dialogs it opened (each one
// dismissed).
func browser(t testing.TB) (*tab, *atomic.Int32) {
	t.Helper()
	chromium.once.Do(startChromium)
	if chromium.path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed, and CI=true requires the browser tests: install Debian's chromium package (apt-get install -y chromium)")
		}
		t.Skip("Chromium is not installed (Debian: apt-get install -y chromium); the browser tests are skipped")
	}
	require.NoError(t, chromium.err, "starting Chromium at %s", chromium.path)
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tb, err := chromium.b.newTab(c, 1100, 820)
	require.NoError(t, err, "opening a tab")
	t.Cleanup(tb.close)
	dialogs := new(atomic.Int32)
	tb.listen(func(method string, _ json.RawMessage) {
		if method == "Page.javascriptDialogOpening" {
			dialogs.Add(1)
			go func() {
				c, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
				defer cancel()
				_ = tb.call(c, "Page.handleJavaScriptDialog", map[string]any{"accept": false}, nil)
			}()
		}
	})
	return tb, dialogs
}

// within runs steps with a deadline, so a page that never gets there fails
// the test instead of hanging it.
func within(t testing.TB, tb *tab, steps ...step) {
	t.Helper()
	c, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	for _, s := range steps {
		require.NoError(t, s(c, tb))
	}
}

func jsEval[T any](t testing.TB, tb *tab, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	var v T
	require.NoError(t, tb.evaluate(c, expr, &v), expr)
	return v
}

// waitFor polls a JavaScript condition until it holds; evaluation errors
// (a navigation replacing the document) count as "not yet".
func waitFor(t *testing.T, tb *tab, cond string) {
	t.Helper()
	c, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := poll(c, tb, cond); err != nil {
		t.Fatalf("waiting for %s: still false after 30s (%v)", cond, err)
	}
}

// screenshot saves the viewport as a PNG test artefact and returns it.
func screenshot(t *testing.T, tb *tab, name string) []byte {
	t.Helper()
	dir := os.Getenv("WEIR_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	c, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := tb.captureScreenshot(c)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(png), "\x89PNG"), "a PNG")
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name))
	return png
}

// docShot takes a screenshot the docs show (see recordShot): pages are
// the paths the browser loaded for it from srv, serving fixture.
func docShot(t *testing.T, ctx *tab, srv *httptest.Server, fixture, name string, pages ...string) {
	t.Helper()
	recordShot(t, srv.URL, fixture, name, screenshot(t, ctx, name), pages...)
}

// serveHTTP serves an inspector on loopback until the test ends, through
// wrap when given; call it after browser, so the live streams end before
// the tab closes.
func serveHTTP(t testing.TB, o Options, wrap ...func(http.Handler) http.Handler) *httptest.Server {
	s := newServer(t, o)
	var h http.Handler = s
	for _, w := range wrap {
		h = w(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	return srv
}

func TestBrowserDemo(t *testing.T) {
	ctx, dialogs := browser(t)
	path := demoPath(t)
	srv := serveHTTP(t, shotFixture(t, "demo"))

	// Sessions: a long name wraps inside the page.
	within(t, ctx, navigate(srv.URL+"/"), waitVisible("table.sessions"))
	require.Equal(t, "session-demo-1", jsEval[string](t, ctx, `document.querySelector("table.sessions tbody tr td:nth-child(2)").textContent`))
	require.True(t, jsEval[bool](t, ctx, `document.querySelector("table.sessions").getBoundingClientRect().right <= document.documentElement.clientWidth`), "the table fits the window")
	docShot(t, ctx, srv, "demo", "sessions.png", "/")

	// Trajectory: the node 0 replacement is a collapsed card, never a bubble.
	within(t, ctx, click(`a[href="/s/demo.jsonl/"]`), waitVisible("#items"))
	waitFor(t, ctx, `document.getElementById("live-state").textContent === "live"`)
	card := `document.querySelector("details.card.prompt.p-changed")`
	require.True(t, jsEval[bool](t, ctx, card+` !== null`))
	require.False(t, jsEval[bool](t, ctx, card+`.open`), "the prompt-change card starts collapsed")
	require.Nil(t, jsEval[any](t, ctx, card+`.closest(".bubble")`))
	require.False(t, jsEval[bool](t, ctx, card+`.classList.contains("bubble")`))
	require.Equal(t, "prompt changed (node 0 replaced)", jsEval[string](t, ctx, card+`.querySelector("summary .label").textContent`))
	require.Zero(t, jsEval[float64](t, ctx, card+`.querySelector("pre.prompt-text").checkVisibility() ? 1 : 0`), "the full text is hidden")
	require.Zero(t, jsEval[float64](t, ctx, `Array.from(document.querySelectorAll(".bubble")).filter(b => b.textContent.includes("Answer like a pirate")).length`),
		"the prompt text is in no bubble")
	require.Equal(t, 5.0, jsEval[float64](t, ctx, `document.querySelectorAll(".bubble.user").length`), "one per turn")
	docShot(t, ctx, srv, "demo", "trajectory.png", "/s/demo.jsonl/")

	within(t, ctx, click(`details.p-changed > summary`))
	require.True(t, jsEval[bool](t, ctx, card+`.open`))
	require.Contains(t, jsEval[string](t, ctx, card+`.querySelector("pre.prompt-text").innerText`), "Answer like a pirate.")
	require.Contains(t, jsEval[string](t, ctx, card+`.querySelector("pre.diff").innerText`), "+ Answer like a pirate.")
	within(t, ctx, evalStep(card+`.scrollIntoView()`))
	docShot(t, ctx, srv, "demo", "prompt-card.png", "/s/demo.jsonl/")

	// The compaction card: its shadowed messages load when expanded.
	within(t, ctx, click(`details.compaction > summary`), click(`details.shadowed > summary`))
	waitFor(t, ctx, `document.querySelectorAll("details.shadowed .slot .it").length === 11`)
	within(t, ctx, evalStep(`document.querySelector("details.compaction").scrollIntoView()`))
	docShot(t, ctx, srv, "demo", "compaction.png", "/s/demo.jsonl/", jsEval[string](t, ctx, `document.querySelector("details.shadowed").dataset.src`))

	// A request: its raw text is what host request --at prints.
	within(t, ctx, click(`a.req[href$="requests?n=4"]`), waitVisible("#pretty"))
	require.Equal(t, "Request 4 of 7", jsEval[string](t, ctx, `document.querySelector("h1").textContent`))
	want := wire(t, path, 25)
	require.Equal(t, pretty([]byte(strings.TrimSuffix(want, "\n"))), jsEval[string](t, ctx, `document.getElementById("pretty").textContent`))
	within(t, ctx, click("#toggle-raw"), waitVisible("#raw"))
	require.Equal(t, strings.TrimSuffix(want, "\n"), jsEval[string](t, ctx, `document.getElementById("raw").innerText`))
	require.True(t, jsEval[bool](t, ctx, `document.getElementById("pretty").hidden`))
	within(t, ctx, click("#toggle-raw"))
	docShot(t, ctx, srv, "demo", "request.png", "/s/demo.jsonl/requests?n=4")

	// Tokens: the chart is drawn; a point opens its request.
	within(t, ctx, navigate(srv.URL+"/s/demo.jsonl/tokens"), waitVisible("#chart"))
	require.Equal(t, 7.0, jsEval[float64](t, ctx, `document.querySelectorAll("#chart a.point circle").length`))
	require.Greater(t, jsEval[float64](t, ctx, `document.querySelector("#chart polyline.meter").getTotalLength()`), 100.0)
	for _, sel := range []string{"line.window", "line.threshold", "line.mark.compaction", "line.mark.prompt"} {
		require.Greater(t, jsEval[float64](t, ctx, `document.querySelector("#chart `+sel+`").getBoundingClientRect().width + document.querySelector("#chart `+sel+`").getBoundingClientRect().height`), 0.0, sel)
	}
	// Every label inside the chart; the meter's line above the provider's
	// marks.
	require.Zero(t, jsEval[float64](t, ctx, `(() => { const c = document.getElementById("chart").getBoundingClientRect();
		return Array.from(document.querySelectorAll("#chart text")).filter(t => { const r = t.getBoundingClientRect(); return r.left < c.left || r.right > c.right; }).length; })()`),
		"no label is clipped")
	require.True(t, jsEval[bool](t, ctx, `(() => { const line = document.querySelector("#chart polyline.meter"), rects = document.querySelectorAll("#chart rect.usage");
		return rects.length > 0 && Array.from(rects).every(r => r.compareDocumentPosition(line) & Node.DOCUMENT_POSITION_FOLLOWING); })()`), "the line is drawn after the provider's marks")
	docShot(t, ctx, srv, "demo", "tokens.png", "/s/demo.jsonl/tokens")
	type pt struct{ X, Y float64 }
	p := jsEval[pt](t, ctx, `(() => { const r = document.querySelectorAll("#chart a.point circle")[2].getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`)
	within(t, ctx, clickXY(p.X, p.Y))
	waitFor(t, ctx, `location.search === "?n=3" && document.querySelector("h1") && document.querySelector("h1").textContent === "Request 3 of 7"`)

	within(t, ctx, navigate(srv.URL+"/s/demo.jsonl/tokens?scale=data"), waitVisible("#chart"))
	require.Equal(t, 7.0, jsEval[float64](t, ctx, `document.querySelectorAll("#chart a.point circle").length`))
	screenshot(t, ctx, "tokens-data.png")

	// The filter: Enter in the text box opens the filtered page.
	within(t, ctx, navigate(srv.URL+"/s/demo.jsonl/"), waitVisible("#f-q"))
	within(t, ctx, sendKeys("#f-q", "pirate\r"))
	// The page's script is deferred: it attaches the filter's handlers only
	// after parsing ends, so the next step waits for the load to complete.
	waitFor(t, ctx, `location.search === "?q=pirate" && document.readyState === "complete"`)
	require.Equal(t, "pirate", jsEval[string](t, ctx, `document.getElementById("f-q").value`))
	require.True(t, jsEval[bool](t, ctx, `(() => { const its = document.querySelectorAll("#items > .it"); return its.length > 0 && Array.from(its).every(e => e.textContent.toLowerCase().includes("pirate")); })()`))
	within(t, ctx, evalStep(`(() => { const k = document.getElementById("f-kind"); k.value = "prompt"; k.dispatchEvent(new Event("change")); })()`))
	waitFor(t, ctx, `location.search === "?kind=prompt&q=pirate"`)
	require.True(t, jsEval[bool](t, ctx, `Array.from(document.querySelectorAll("#items > .it")).every(e => e.classList.contains("prompt"))`))

	require.Zero(t, dialogs.Load())
}

func TestBrowserHostileLogRunsNothing(t *testing.T) {
	ctx, dialogs := browser(t)
	dir := t.TempDir()
	hostileSession(t, dir)
	srv := serveHTTP(t, Options{Dir: dir})

	clean := func(where string) {
		t.Helper()
		require.Equal(t, "undefined", jsEval[string](t, ctx, `typeof window.__xss`), "%s: no payload ran", where)
		require.NotContains(t, jsEval[string](t, ctx, `document.title`), "pwned", where)
		require.Zero(t, jsEval[float64](t, ctx, `document.querySelectorAll("main img, main iframe, main script, main style, #items svg, main a[href^='javascript:']").length`),
			"%s: no element came from the log", where)
		require.Zero(t, dialogs.Load(), "%s: no dialog opened", where)
	}
	within(t, ctx, navigate(srv.URL+"/"), waitVisible("table.sessions"))
	clean("sessions")
	within(t, ctx, navigate(srv.URL+"/s/hostile.jsonl/"), waitVisible("#items"))
	// Open every card, the compaction's shadowed messages too.
	within(t, ctx, evalStep(`document.querySelectorAll("details").forEach(d => d.open = true)`))
	waitFor(t, ctx, `document.querySelectorAll("details.shadowed .slot .it").length === 11`)
	time.Sleep(200 * time.Millisecond) // give any injected handler its chance
	text := jsEval[string](t, ctx, `document.getElementById("items").innerText`)
	require.Contains(t, text, xssUser, "the payload is shown as text")
	require.Contains(t, text, "invoice<U+202E>fdp.exe", "the bidi override is shown, not obeyed")
	require.Contains(t, text, xssTool)
	require.Contains(t, text, xssPlugin)
	require.Contains(t, text, xssFailure)
	require.Contains(t, text, xssPrompt)
	clean("trajectory")
	screenshot(t, ctx, "hostile-trajectory.png")
	for _, target := range []string{"/s/hostile.jsonl/requests?n=1", "/s/hostile.jsonl/tokens"} {
		within(t, ctx, navigate(srv.URL+target), waitVisible("main"))
		within(t, ctx, evalStep(`document.querySelectorAll("details").forEach(d => d.open = true)`))
		time.Sleep(100 * time.Millisecond)
		clean(target)
	}
	require.Contains(t, jsEval[string](t, ctx, `document.body.innerText`), "request")
}

// TestBrowserLiveExact grows a session the page shows while the server
// answers each items fetch after a random delay and the new events reach
// the file in chunks cut at random bytes (torn lines included): every
// item appears exactly once and the counters follow the log.
func TestBrowserLiveExact(t *testing.T) {
	ctx, _ := browser(t)
	dir := t.TempDir()
	path := copyDemo(t, dir, "live.jsonl")
	const turns = 8
	grown := grownBytes(t, path, turns)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(seed), 29))
	n := func(k int) int {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(k)
	}
	srv := serveHTTP(t, Options{Dir: dir, Poll: 10 * time.Millisecond}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/items") {
				time.Sleep(time.Duration(n(150)) * time.Millisecond)
			}
			h.ServeHTTP(w, r)
		})
	})

	within(t, ctx, navigate(srv.URL+"/s/live.jsonl/"), waitVisible("#items"))
	waitFor(t, ctx, `document.getElementById("live-state").textContent === "live"`)
	within(t, ctx, evalStep(`window.__sameDocument = true`))

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	for rest := grown; len(rest) > 0; {
		k := min(len(rest), 1+n(400))
		_, err := f.Write(rest[:k])
		require.NoError(t, err)
		rest = rest[k:]
		time.Sleep(time.Duration(n(15)) * time.Millisecond)
	}
	require.NoError(t, f.Close())
	full, err := Load(path)
	require.NoError(t, err)
	last := 5 + turns
	waitFor(t, ctx, `document.getElementById("items").innerText.includes("answer `+itoa(int64(last))+`")`)
	waitFor(t, ctx, `document.getElementById("events").textContent === "`+itoa(int64(full.Log.Len()))+`"`)
	time.Sleep(300 * time.Millisecond) // any late duplicate has its chance to land

	require.True(t, jsEval[bool](t, ctx, `window.__sameDocument === true`), "the page was updated, not reloaded")
	for i := 1; i <= last; i++ {
		require.Equal(t, 1.0, jsEval[float64](t, ctx, `Array.from(document.querySelectorAll("h2.turn")).filter(h => h.firstChild.textContent === "Turn `+itoa(int64(i))+`").length`), "turn %d once", i)
	}
	for i := 6; i <= last; i++ {
		require.Equal(t, 1.0, jsEval[float64](t, ctx, `Array.from(document.querySelectorAll(".bubble.user .text")).filter(b => b.textContent === "question `+itoa(int64(i))+`").length`), "question %d once", i)
	}
	require.True(t, jsEval[bool](t, ctx, `(() => { const s = Array.from(document.querySelectorAll("#items > [data-seq]"), e => e.dataset.seq); return new Set(s).size === s.length; })()`), "no seq twice")
	seqs := jsEval[[]float64](t, ctx, `Array.from(document.querySelectorAll("#items > [data-seq]"), e => Number(e.dataset.seq))`)
	m := Build(full)
	want := make([]float64, 0, len(m.Items))
	for _, it := range m.Items {
		if it.Kind == ItemTurnEnd && it.Note == "completed" {
			continue
		}
		want = append(want, float64(it.Seq))
	}
	require.Equal(t, want, seqs, "every item of the log, in order")
	require.Equal(t, itoa(int64(last)), jsEval[string](t, ctx, `document.getElementById("turns").textContent`))
	require.Equal(t, itoa(int64(7+turns)), jsEval[string](t, ctx, `document.getElementById("requests").textContent`))
	require.Equal(t, "1", jsEval[string](t, ctx, `document.getElementById("compactions").textContent`))
}

// TestBrowserLargeSession opens a 100k-event session on a cold server:
// the first page shows, scrolling loads the next ones. It logs the
// browser's own navigation timings (a report, not an assertion: speed is
// measured by the benchmarks).
func TestBrowserLargeSession(t *testing.T) {
	ctx, _ := browser(t)
	path := bigSession(t, t.TempDir(), 100_000)
	srv := serveHTTP(t, Options{Files: []string{path}})

	within(t, ctx, navigate(srv.URL+"/s/big.jsonl/"), waitVisible("#items"))
	type timing struct{ Response, DOMContentLoaded, FirstContentfulPaint float64 }
	tm := jsEval[timing](t, ctx, `(() => {
		const n = performance.getEntriesByType("navigation")[0];
		const p = performance.getEntriesByName("first-contentful-paint")[0];
		return {Response: n.responseEnd, DOMContentLoaded: n.domContentLoadedEventEnd, FirstContentfulPaint: p ? p.startTime : -1};
	})()`)
	t.Logf("100k-event session, cold server: response end %.0f ms, DOMContentLoaded %.0f ms, first contentful paint %.0f ms",
		tm.Response, tm.DOMContentLoaded, tm.FirstContentfulPaint)
	require.Equal(t, float64(PageSize), jsEval[float64](t, ctx, `document.querySelectorAll("#items > .it").length`))
	within(t, ctx, evalStep(`document.querySelector("#items > .more").scrollIntoView()`))
	waitFor(t, ctx, `document.querySelectorAll("#items > .it").length >= 2 * `+itoa(PageSize))
	waitFor(t, ctx, `document.getElementById("events").textContent === "100000" || Number(document.getElementById("events").textContent) >= 100000`)
	// Once the whole log is read, the header says so and has every counter.
	require.Nil(t, jsEval[any](t, ctx, `document.getElementById("partial")`), "no 'still being read' once it is read")
	full, err := Load(path)
	require.NoError(t, err)
	m := Build(full)
	require.Equal(t, itoa(full.Log.LastTurn()), jsEval[string](t, ctx, `document.getElementById("turns").textContent`))
	require.Equal(t, itoa(int64(len(m.Requests))), jsEval[string](t, ctx, `document.getElementById("requests").textContent`))
}

// TestBrowserBigViews opens what used to be unusable: a request carrying
// a 5 MB tool result, its trajectory, and the chart of a session with more
// requests than ChartColumns. It logs the browser's timings (a report:
// the figures that matter are the benchmarks').
func TestBrowserBigViews(t *testing.T) {
	ctx, dialogs := browser(t)
	o := shotFixture(t, "big")
	path := o.Files[0]
	srv := serveHTTP(t, o)
	m, err := Load(path)
	require.NoError(t, err)
	bm := Build(m)
	n := len(bm.Requests)
	var seq int64 // the 5 MB result: the last tool result
	for _, it := range bm.Items {
		if it.Kind == ItemTool {
			seq = it.Seq
		}
	}

	type timing struct{ Response, Load float64 }
	timings := `(() => { const n = performance.getEntriesByType("navigation")[0]; return {Response: n.responseEnd, Load: n.loadEventEnd}; })()`
	within(t, ctx, navigate(srv.URL+"/s/big.jsonl/requests?n="+itoa(int64(n))), waitVisible("#body-cut"))
	tm := jsEval[timing](t, ctx, timings)
	t.Logf("request with a 5 MB tool result: response end %.0f ms, load %.0f ms", tm.Response, tm.Load)
	require.Less(t, jsEval[float64](t, ctx, `document.documentElement.outerHTML.length`), float64(256<<10), "a bounded page")
	require.Contains(t, jsEval[string](t, ctx, `document.getElementById("body-cut").textContent`), "download the exact body")
	docShot(t, ctx, srv, "big", "big-request.png", "/s/big.jsonl/requests?n="+itoa(int64(n)))

	within(t, ctx, navigate(srv.URL+"/s/big.jsonl/#e"+itoa(seq)), waitVisible("#items"))
	within(t, ctx, evalStep(`document.getElementById("e`+itoa(seq)+`").querySelector("details").open = true; document.getElementById("e`+itoa(seq)+`").scrollIntoView()`))
	require.Equal(t, "/api/s/big.jsonl/events/"+itoa(seq)+"/text", jsEval[string](t, ctx, `document.getElementById("e`+itoa(seq)+`").querySelector(".cut a[download]").getAttribute("href")`))
	docShot(t, ctx, srv, "big", "big-result.png", "/s/big.jsonl/")

	within(t, ctx, navigate(srv.URL+"/s/big.jsonl~2/tokens"), waitVisible("#chart"))
	require.Equal(t, float64(ChartColumns), jsEval[float64](t, ctx, `document.querySelectorAll("#chart a.point circle").length`))
	require.Equal(t, float64(TableRows), jsEval[float64](t, ctx, `document.querySelectorAll("table.points tbody tr").length`))
	docShot(t, ctx, srv, "big", "tokens-dense.png", "/s/big.jsonl~2/tokens")
	require.Zero(t, dialogs.Load())
}

// BenchmarkBrowserBigRequest opens the request page of a request that
// carries a 5 MB tool result in a new tab of headless Chromium, until the
// page is laid out (its "shown in part" note is visible), and reports the
// renderer's CPU time for it from the DevTools Performance metrics: all
// its tasks (cpu-ms), and of them script, style recalculation and layout;
// load-ms is the wall time from the navigation to the note. ns/op includes
// opening and closing the tab.
func BenchmarkBrowserBigRequest(b *testing.B) {
	_, _ = browser(b)
	path := copyDemo(b, b.TempDir(), "big.jsonl")
	appendToolTurn(b, path, bigResult(5<<20))
	srv := serveHTTP(b, Options{Files: []string{path}})
	url := srv.URL + "/s/big.jsonl/requests?n=9"
	metrics := func(ctx context.Context, tb *tab) map[string]float64 {
		var res struct {
			Metrics []struct {
				Name  string  `json:"name"`
				Value float64 `json:"value"`
			} `json:"metrics"`
		}
		require.NoError(b, tb.call(ctx, "Performance.getMetrics", nil, &res))
		out := map[string]float64{}
		for _, m := range res.Metrics {
			out[m.Name] = m.Value
		}
		return out
	}
	names := map[string]string{"TaskDuration": "cpu-ms/op", "ScriptDuration": "script-ms/op",
		"RecalcStyleDuration": "style-ms/op", "LayoutDuration": "layout-ms/op"}
	sums := map[string]float64{}
	var load time.Duration
	// One load first: the server builds the request once, as for any view
	// after the first.
	open := func() {
		c, stop := context.WithTimeout(context.Background(), 60*time.Second)
		defer stop()
		tb, err := chromium.b.newTab(c, 1100, 820)
		require.NoError(b, err)
		defer tb.close()
		require.NoError(b, tb.call(c, "Performance.enable", nil, nil))
		before := metrics(c, tb)
		start := time.Now()
		require.NoError(b, navigate(url)(c, tb))
		require.NoError(b, waitVisible("#body-cut")(c, tb))
		load += time.Since(start)
		after := metrics(c, tb)
		for k := range names {
			d := after[k] - before[k]
			if d < 0 { // the navigation started the counters anew
				d = after[k]
			}
			sums[k] += d
		}
	}
	open()
	clear(sums)
	load = 0
	for b.Loop() {
		open()
	}
	for k, unit := range names {
		b.ReportMetric(sums[k]*1000/float64(b.N), unit)
	}
	b.ReportMetric(float64(load.Milliseconds())/float64(b.N), "load-ms/op")
}
