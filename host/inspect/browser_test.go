package inspect

import (
	"context"
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

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The browser tests drive headless Chromium (Debian's chromium package)
// with chromedp: one browser for the package's run, a new tab per test.
// Without Chromium they skip, except under CI=true, where they fail.
// Screenshots go to $WEIR_SCREENSHOTS when set, else to the test's
// temporary folder.

var chromium struct {
	once    sync.Once
	path    string
	ctx     context.Context // the browser
	cancel  func()
	profile string
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.cancel != nil {
		chromium.cancel()
	}
	if chromium.profile != "" {
		_ = os.RemoveAll(chromium.profile)
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
	chromium.profile, chromium.err = os.MkdirTemp("", "weir-inspect-chromium-")
	if chromium.err != nil {
		return
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium.path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(chromium.profile),
		chromedp.WindowSize(1100, 820),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	chromium.ctx = ctx
	chromium.cancel = func() {
		cancel()
		cancelAlloc()
	}
	chromium.err = chromedp.Do(ctx)
}

// browser opens a tab of the package's headless Chromium for one test and
// returns it with a counter of JavaScript dialogs it opened (each one
// dismissed).
func browser(t *testing.T) (context.Context, *atomic.Int32) {
	t.Helper()
	chromium.once.Do(startChromium)
	if chromium.path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed, and CI=true requires the browser tests: install Debian's chromium package (apt-get install -y chromium)")
		}
		t.Skip("Chromium is not installed (Debian: apt-get install -y chromium); the browser tests are skipped")
	}
	require.NoError(t, chromium.err, "starting Chromium at %s", chromium.path)
	ctx, cancel := chromedp.NewContext(chromium.ctx)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1100, 820)), "opening a tab")
	dialogs := new(atomic.Int32)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go func() {
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
					_, err := cdp.Call(ctx, t, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
					return err
				}))
			}()
		}
	}))
	return ctx, dialogs
}

// within runs steps with a deadline, so a page that never gets there fails
// the test instead of hanging it.
func within(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(c, steps...))
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// waitFor polls a JavaScript condition until it holds; evaluation errors
// (a navigation replacing the document) count as "not yet".
func waitFor(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: still false after 30s (last error: %v)", cond, last)
}

// screenshot saves the viewport as a PNG test artefact.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("WEIR_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(png), "\x89PNG"), "a PNG")
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name))
}

// serveHTTP serves an inspector on loopback until the test ends, through
// wrap when given; call it after browser, so the live streams end before
// the tab closes.
func serveHTTP(t *testing.T, o Options, wrap ...func(http.Handler) http.Handler) *httptest.Server {
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
	long := copyDemo(t, t.TempDir(), strings.Repeat("a-session-with-a-long-name-", 6)+"demo.jsonl")
	srv := serveHTTP(t, Options{Files: []string{path, long}})

	// Sessions: a long name wraps inside the page.
	within(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("table.sessions")))
	require.Equal(t, "session-demo-1", eval[string](t, ctx, `document.querySelector("table.sessions tbody tr td:nth-child(2)").textContent`))
	require.True(t, eval[bool](t, ctx, `document.querySelector("table.sessions").getBoundingClientRect().right <= document.documentElement.clientWidth`), "the table fits the window")
	screenshot(t, ctx, "sessions.png")

	// Trajectory: the node 0 replacement is a collapsed card, never a bubble.
	within(t, ctx, chromedp.Click(chromedp.CSS(`a[href="/s/demo.jsonl/"]`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	waitFor(t, ctx, `document.getElementById("live-state").textContent === "live"`)
	card := `document.querySelector("details.card.prompt.p-changed")`
	require.True(t, eval[bool](t, ctx, card+` !== null`))
	require.False(t, eval[bool](t, ctx, card+`.open`), "the prompt-change card starts collapsed")
	require.Nil(t, eval[any](t, ctx, card+`.closest(".bubble")`))
	require.False(t, eval[bool](t, ctx, card+`.classList.contains("bubble")`))
	require.Equal(t, "prompt changed (node 0 replaced)", eval[string](t, ctx, card+`.querySelector("summary .label").textContent`))
	require.Zero(t, eval[float64](t, ctx, card+`.querySelector("pre.prompt-text").checkVisibility() ? 1 : 0`), "the full text is hidden")
	require.Zero(t, eval[float64](t, ctx, `Array.from(document.querySelectorAll(".bubble")).filter(b => b.textContent.includes("Answer like a pirate")).length`),
		"the prompt text is in no bubble")
	require.Equal(t, 5.0, eval[float64](t, ctx, `document.querySelectorAll(".bubble.user").length`), "one per turn")
	screenshot(t, ctx, "trajectory.png")

	within(t, ctx, chromedp.Click(chromedp.CSS(`details.p-changed > summary`)))
	require.True(t, eval[bool](t, ctx, card+`.open`))
	require.Contains(t, eval[string](t, ctx, card+`.querySelector("pre.prompt-text").innerText`), "Answer like a pirate.")
	require.Contains(t, eval[string](t, ctx, card+`.querySelector("pre.diff").innerText`), "+ Answer like a pirate.")
	within(t, ctx, chromedp.Evaluate[chromedp.Void](card+`.scrollIntoView()`))
	screenshot(t, ctx, "prompt-card.png")

	// The compaction card: its shadowed messages load when expanded.
	within(t, ctx, chromedp.Click(chromedp.CSS(`details.compaction > summary`)), chromedp.Click(chromedp.CSS(`details.shadowed > summary`)))
	waitFor(t, ctx, `document.querySelectorAll("details.shadowed .slot .it").length === 11`)
	within(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("details.compaction").scrollIntoView()`))
	screenshot(t, ctx, "compaction.png")

	// A request: its raw text is what host request --at prints.
	within(t, ctx, chromedp.Click(chromedp.CSS(`a.req[href$="requests?n=4"]`)), chromedp.WaitVisible(chromedp.CSS("#pretty")))
	require.Equal(t, "Request 4 of 7", eval[string](t, ctx, `document.querySelector("h1").textContent`))
	want := wire(t, path, 25)
	require.Equal(t, pretty([]byte(strings.TrimSuffix(want, "\n"))), eval[string](t, ctx, `document.getElementById("pretty").textContent`))
	within(t, ctx, chromedp.Click(chromedp.ID("toggle-raw")), chromedp.WaitVisible(chromedp.ID("raw")))
	require.Equal(t, strings.TrimSuffix(want, "\n"), eval[string](t, ctx, `document.getElementById("raw").innerText`))
	require.True(t, eval[bool](t, ctx, `document.getElementById("pretty").hidden`))
	within(t, ctx, chromedp.Click(chromedp.ID("toggle-raw")))
	screenshot(t, ctx, "request.png")

	// Tokens: the chart is drawn; a point opens its request.
	within(t, ctx, chromedp.Navigate(srv.URL+"/s/demo.jsonl/tokens"), chromedp.WaitVisible(chromedp.ID("chart")))
	require.Equal(t, 7.0, eval[float64](t, ctx, `document.querySelectorAll("#chart a.point circle").length`))
	require.Greater(t, eval[float64](t, ctx, `document.querySelector("#chart polyline.meter").getTotalLength()`), 100.0)
	for _, sel := range []string{"line.window", "line.threshold", "line.mark.compaction", "line.mark.prompt"} {
		require.Greater(t, eval[float64](t, ctx, `document.querySelector("#chart `+sel+`").getBoundingClientRect().width + document.querySelector("#chart `+sel+`").getBoundingClientRect().height`), 0.0, sel)
	}
	// Every label inside the chart; the meter's line above the provider's
	// marks.
	require.Zero(t, eval[float64](t, ctx, `(() => { const c = document.getElementById("chart").getBoundingClientRect();
		return Array.from(document.querySelectorAll("#chart text")).filter(t => { const r = t.getBoundingClientRect(); return r.left < c.left || r.right > c.right; }).length; })()`),
		"no label is clipped")
	require.True(t, eval[bool](t, ctx, `(() => { const line = document.querySelector("#chart polyline.meter"), rects = document.querySelectorAll("#chart rect.usage");
		return rects.length > 0 && Array.from(rects).every(r => r.compareDocumentPosition(line) & Node.DOCUMENT_POSITION_FOLLOWING); })()`), "the line is drawn after the provider's marks")
	screenshot(t, ctx, "tokens.png")
	type pt struct{ X, Y float64 }
	p := eval[pt](t, ctx, `(() => { const r = document.querySelectorAll("#chart a.point circle")[2].getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`)
	within(t, ctx, chromedp.MouseClickXY(p.X, p.Y))
	waitFor(t, ctx, `location.search === "?n=3" && document.querySelector("h1") && document.querySelector("h1").textContent === "Request 3 of 7"`)

	within(t, ctx, chromedp.Navigate(srv.URL+"/s/demo.jsonl/tokens?scale=data"), chromedp.WaitVisible(chromedp.ID("chart")))
	require.Equal(t, 7.0, eval[float64](t, ctx, `document.querySelectorAll("#chart a.point circle").length`))
	screenshot(t, ctx, "tokens-data.png")

	// The filter: Enter in the text box opens the filtered page.
	within(t, ctx, chromedp.Navigate(srv.URL+"/s/demo.jsonl/"), chromedp.WaitVisible(chromedp.ID("f-q")))
	within(t, ctx, chromedp.SendKeys(chromedp.ID("f-q"), "pirate\r"))
	waitFor(t, ctx, `location.search === "?q=pirate" && document.getElementById("items")`)
	require.Equal(t, "pirate", eval[string](t, ctx, `document.getElementById("f-q").value`))
	require.True(t, eval[bool](t, ctx, `(() => { const its = document.querySelectorAll("#items > .it"); return its.length > 0 && Array.from(its).every(e => e.textContent.toLowerCase().includes("pirate")); })()`))
	within(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => { const k = document.getElementById("f-kind"); k.value = "prompt"; k.dispatchEvent(new Event("change")); })()`))
	waitFor(t, ctx, `location.search === "?kind=prompt&q=pirate"`)
	require.True(t, eval[bool](t, ctx, `Array.from(document.querySelectorAll("#items > .it")).every(e => e.classList.contains("prompt"))`))

	require.Zero(t, dialogs.Load())
}

func TestBrowserHostileLogRunsNothing(t *testing.T) {
	ctx, dialogs := browser(t)
	dir := t.TempDir()
	hostileSession(t, dir)
	srv := serveHTTP(t, Options{Dir: dir})

	clean := func(where string) {
		t.Helper()
		require.Equal(t, "undefined", eval[string](t, ctx, `typeof window.__xss`), "%s: no payload ran", where)
		require.NotContains(t, eval[string](t, ctx, `document.title`), "pwned", where)
		require.Zero(t, eval[float64](t, ctx, `document.querySelectorAll("main img, main iframe, main script, main style, #items svg, main a[href^='javascript:']").length`),
			"%s: no element came from the log", where)
		require.Zero(t, dialogs.Load(), "%s: no dialog opened", where)
	}
	within(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("table.sessions")))
	clean("sessions")
	within(t, ctx, chromedp.Navigate(srv.URL+"/s/hostile.jsonl/"), chromedp.WaitVisible(chromedp.CSS("#items")))
	// Open every card, the compaction's shadowed messages too.
	within(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`))
	waitFor(t, ctx, `document.querySelectorAll("details.shadowed .slot .it").length === 11`)
	time.Sleep(200 * time.Millisecond) // give any injected handler its chance
	text := eval[string](t, ctx, `document.getElementById("items").innerText`)
	require.Contains(t, text, xssUser, "the payload is shown as text")
	require.Contains(t, text, "invoice<U+202E>fdp.exe", "the bidi override is shown, not obeyed")
	require.Contains(t, text, xssTool)
	require.Contains(t, text, xssPlugin)
	require.Contains(t, text, xssFailure)
	require.Contains(t, text, xssPrompt)
	clean("trajectory")
	screenshot(t, ctx, "hostile-trajectory.png")
	for _, target := range []string{"/s/hostile.jsonl/requests?n=1", "/s/hostile.jsonl/tokens"} {
		within(t, ctx, chromedp.Navigate(srv.URL+target), chromedp.WaitVisible(chromedp.CSS("main")))
		within(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`))
		time.Sleep(100 * time.Millisecond)
		clean(target)
	}
	require.Contains(t, eval[string](t, ctx, `document.body.innerText`), "request")
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

	within(t, ctx, chromedp.Navigate(srv.URL+"/s/live.jsonl/"), chromedp.WaitVisible(chromedp.CSS("#items")))
	waitFor(t, ctx, `document.getElementById("live-state").textContent === "live"`)
	within(t, ctx, chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))

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

	require.True(t, eval[bool](t, ctx, `window.__sameDocument === true`), "the page was updated, not reloaded")
	for i := 1; i <= last; i++ {
		require.Equal(t, 1.0, eval[float64](t, ctx, `Array.from(document.querySelectorAll("h2.turn")).filter(h => h.firstChild.textContent === "Turn `+itoa(int64(i))+`").length`), "turn %d once", i)
	}
	for i := 6; i <= last; i++ {
		require.Equal(t, 1.0, eval[float64](t, ctx, `Array.from(document.querySelectorAll(".bubble.user .text")).filter(b => b.textContent === "question `+itoa(int64(i))+`").length`), "question %d once", i)
	}
	require.True(t, eval[bool](t, ctx, `(() => { const s = Array.from(document.querySelectorAll("#items > [data-seq]"), e => e.dataset.seq); return new Set(s).size === s.length; })()`), "no seq twice")
	seqs := eval[[]float64](t, ctx, `Array.from(document.querySelectorAll("#items > [data-seq]"), e => Number(e.dataset.seq))`)
	m := Build(full)
	want := make([]float64, 0, len(m.Items))
	for _, it := range m.Items {
		if it.Kind == ItemTurnEnd && it.Note == "completed" {
			continue
		}
		want = append(want, float64(it.Seq))
	}
	require.Equal(t, want, seqs, "every item of the log, in order")
	require.Equal(t, itoa(int64(last)), eval[string](t, ctx, `document.getElementById("turns").textContent`))
	require.Equal(t, itoa(int64(7+turns)), eval[string](t, ctx, `document.getElementById("requests").textContent`))
	require.Equal(t, "1", eval[string](t, ctx, `document.getElementById("compactions").textContent`))
}

// TestBrowserLargeSession opens a 100k-event session on a cold server:
// the first page shows, scrolling loads the next ones. It logs the
// browser's own navigation timings (a report, not an assertion: speed is
// measured by the benchmarks).
func TestBrowserLargeSession(t *testing.T) {
	ctx, _ := browser(t)
	path := bigSession(t, t.TempDir(), 100_000)
	srv := serveHTTP(t, Options{Files: []string{path}})

	within(t, ctx, chromedp.Navigate(srv.URL+"/s/big.jsonl/"), chromedp.WaitVisible(chromedp.CSS("#items")))
	type timing struct{ Response, DOMContentLoaded, FirstContentfulPaint float64 }
	tm := eval[timing](t, ctx, `(() => {
		const n = performance.getEntriesByType("navigation")[0];
		const p = performance.getEntriesByName("first-contentful-paint")[0];
		return {Response: n.responseEnd, DOMContentLoaded: n.domContentLoadedEventEnd, FirstContentfulPaint: p ? p.startTime : -1};
	})()`)
	t.Logf("100k-event session, cold server: response end %.0f ms, DOMContentLoaded %.0f ms, first contentful paint %.0f ms",
		tm.Response, tm.DOMContentLoaded, tm.FirstContentfulPaint)
	require.Equal(t, float64(PageSize), eval[float64](t, ctx, `document.querySelectorAll("#items > .it").length`))
	within(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#items > .more").scrollIntoView()`))
	waitFor(t, ctx, `document.querySelectorAll("#items > .it").length >= 2 * `+itoa(PageSize))
	waitFor(t, ctx, `document.getElementById("events").textContent === "100000" || Number(document.getElementById("events").textContent) >= 100000`)
	// Once the whole log is read, the header says so and has every counter.
	require.Nil(t, eval[any](t, ctx, `document.getElementById("partial")`), "no 'still being read' once it is read")
	full, err := Load(path)
	require.NoError(t, err)
	m := Build(full)
	require.Equal(t, itoa(full.Log.LastTurn()), eval[string](t, ctx, `document.getElementById("turns").textContent`))
	require.Equal(t, itoa(int64(len(m.Requests))), eval[string](t, ctx, `document.getElementById("requests").textContent`))
}

// TestBrowserBigViews opens what used to be unusable: a request carrying
// a 5 MB tool result, its trajectory, and the chart of a session with more
// requests than ChartColumns. It logs the browser's timings (a report:
// the figures that matter are the benchmarks').
func TestBrowserBigViews(t *testing.T) {
	ctx, dialogs := browser(t)
	dir := t.TempDir()
	path := copyDemo(t, dir, "big.jsonl")
	seq := appendToolTurn(t, path, bigResult(5<<20))
	long := bigSession(t, t.TempDir(), 2300)
	srv := serveHTTP(t, Options{Files: []string{path, long}})
	m, err := Load(path)
	require.NoError(t, err)
	n := len(Build(m).Requests)

	type timing struct{ Response, Load float64 }
	timings := `(() => { const n = performance.getEntriesByType("navigation")[0]; return {Response: n.responseEnd, Load: n.loadEventEnd}; })()`
	within(t, ctx, chromedp.Navigate(srv.URL+"/s/big.jsonl/requests?n="+itoa(int64(n))), chromedp.WaitVisible(chromedp.ID("body-cut")))
	tm := eval[timing](t, ctx, timings)
	t.Logf("request with a 5 MB tool result: response end %.0f ms, load %.0f ms", tm.Response, tm.Load)
	require.Less(t, eval[float64](t, ctx, `document.documentElement.outerHTML.length`), float64(256<<10), "a bounded page")
	require.Contains(t, eval[string](t, ctx, `document.getElementById("body-cut").textContent`), "download the exact body")
	screenshot(t, ctx, "big-request.png")

	within(t, ctx, chromedp.Navigate(srv.URL+"/s/big.jsonl/#e"+itoa(seq)), chromedp.WaitVisible(chromedp.CSS("#items")))
	within(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("e`+itoa(seq)+`").querySelector("details").open = true; document.getElementById("e`+itoa(seq)+`").scrollIntoView()`))
	require.Equal(t, "/api/s/big.jsonl/events/"+itoa(seq)+"/text", eval[string](t, ctx, `document.getElementById("e`+itoa(seq)+`").querySelector(".cut a[download]").getAttribute("href")`))
	screenshot(t, ctx, "big-result.png")

	within(t, ctx, chromedp.Navigate(srv.URL+"/s/big.jsonl~2/tokens"), chromedp.WaitVisible(chromedp.ID("chart")))
	require.Equal(t, float64(ChartColumns), eval[float64](t, ctx, `document.querySelectorAll("#chart a.point circle").length`))
	require.Equal(t, float64(TableRows), eval[float64](t, ctx, `document.querySelectorAll("table.points tbody tr").length`))
	screenshot(t, ctx, "tokens-dense.png")
	require.Zero(t, dialogs.Load())
}
