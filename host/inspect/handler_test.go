package inspect

import (
	"bufio"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
)

func newServer(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := New(o)
	require.NoError(t, err)
	return s
}

// get serves one request and returns the response.
func get(t testing.TB, h http.Handler, method, target string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t testing.TB, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// ok fetches target, requires 200 and returns the body.
func ok(t testing.TB, h http.Handler, target string) string {
	t.Helper()
	res := get(t, h, "GET", target)
	b := body(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", target, b)
	require.Equal(t, CSP, res.Header.Get("Content-Security-Policy"), target)
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), target)
	return b
}

func decode(t testing.TB, s string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(s), v), s)
}

func TestSessionsPageAndAPI(t *testing.T) {
	dir := t.TempDir()
	copyDemo(t, dir, "demo.jsonl")
	require.NoError(t, os.WriteFile(dir+"/broken.jsonl", []byte("not a log\n"), 0o600))
	s := newServer(t, Options{Dir: dir})
	page := ok(t, s, "/")
	require.Contains(t, page, `<a href="/s/demo.jsonl/">demo.jsonl</a>`)
	require.Contains(t, page, "session-demo-1")
	require.Contains(t, page, "does not load:", "a broken file is listed with its error")

	var out struct {
		Sessions []Summary `json:"sessions"`
	}
	decode(t, ok(t, s, "/api/sessions"), &out)
	require.Len(t, out.Sessions, 2)
	var demo Summary
	for _, x := range out.Sessions {
		if x.Name == "demo.jsonl" {
			demo = x
		}
	}
	require.Equal(t, Summary{Name: "demo.jsonl", ID: "session-demo-1", Turns: 5, Events: 51, Nodes: 5, Tokens: demo.Tokens,
		LastActivity: 1767268800000, Requests: 7, Compactions: 1}, demo)
	require.Positive(t, demo.Tokens)

	var sum Summary
	decode(t, ok(t, s, "/api/s/demo.jsonl/summary"), &sum)
	require.Equal(t, demo, sum)
}

func TestTrajectoryPage(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	page := ok(t, s, "/s/demo.jsonl/")
	// The node 0 replacement is a collapsed prompt-change card, not a bubble.
	i := strings.Index(page, `<details class="it card prompt p-changed" data-seq="22"`)
	require.Positive(t, i, page)
	card := page[i : i+strings.Index(page[i:], "</details>")]
	require.Contains(t, card, "prompt changed (node 0 replaced)")
	require.Contains(t, card, "(replaces seq 2)")
	require.Contains(t, card, `<span class="add">&#43; Answer like a pirate.</span>`, "the diff against the prompt in effect")
	require.NotContains(t, card, " open", "collapsed")
	require.NotContains(t, page, `bubble other`, "no system bubble")
	require.Contains(t, page, `<details class="it card prompt p-set" data-seq="2"`)
	// Bubbles, reasoning, tool calls and results.
	require.Contains(t, page, `<div class="it bubble user" data-seq="3"`)
	require.Contains(t, page, `<div class="it bubble assistant" data-seq="6"`)
	require.Contains(t, page, `<details class="reasoning"><summary>reasoning (54 chars)</summary>`)
	require.Contains(t, page, `→ tool call <code>list_files</code>`)
	require.Contains(t, page, `← <code>list_files</code> result`)
	require.Contains(t, page, `href="/s/demo.jsonl/requests?n=1">request 1</a>`)
	// The compaction card.
	i = strings.Index(page, `<details class="it card compaction" data-seq="42" data-cid="cmp-a2c90071fe73c49c"`)
	require.Positive(t, i)
	card = page[i : i+strings.Index(page[i:], "</details></div>\n</details>")]
	for _, want := range []string{"manual", "range seq 3..33", "11 nodes shadowed", "tokens 464 → 393", "summarized by offline/demo",
		"checkpoint seq 41 by compaction-basic", "## Primary Request and Intent", `data-src="/s/demo.jsonl/shadowed?c=cmp-a2c90071fe73c49c"`} {
		require.Contains(t, card, want)
	}
	require.NotContains(t, page, `data-seq="41"`, "the checkpoint is shown in its compaction card, not as a bubble")
	require.NotContains(t, page, `class="more"`, "the demo fits one page")

	// The shadowed messages of the compaction, as a fragment.
	frag := ok(t, s, "/s/demo.jsonl/shadowed?c=cmp-a2c90071fe73c49c")
	require.Equal(t, 11, strings.Count(frag, `class="it `))
	require.Contains(t, frag, "Hello, who are you?")
	res := get(t, s, "GET", "/s/demo.jsonl/shadowed?c=nope")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body(t, res), `session "demo.jsonl" has no compaction "nope"`)
}

func TestTrajectoryPaging(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	frag := ok(t, s, "/s/demo.jsonl/items?from=20&limit=5")
	require.NotContains(t, frag, "<html")
	require.Equal(t, 5, strings.Count(frag, `class="it `)+strings.Count(frag, `class="it card turnend`)*0)
	require.Contains(t, frag, `<h2 class="it turn" data-seq="20"`)
	require.Regexp(t, `<div class="more" data-next="\d+">`, frag)

	var out struct {
		Items  []Item `json:"items"`
		Next   int64  `json:"next"`
		Events int    `json:"events"`
	}
	decode(t, ok(t, s, "/api/s/demo.jsonl/items?from=20&limit=5"), &out)
	require.Len(t, out.Items, 5)
	require.Equal(t, int64(20), out.Items[0].Seq)
	require.Equal(t, ItemTurn, out.Items[0].Kind)
	require.Equal(t, ItemPrompt, out.Items[2].Kind)
	require.Equal(t, PromptChanged, out.Items[2].Prompt.Kind)
	require.Equal(t, 51, out.Events)
	decode(t, ok(t, s, "/api/s/demo.jsonl/items?from="+strconv.FormatInt(out.Next, 10)+"&limit=5000"), &out)
	require.Equal(t, int64(-1), out.Next)

	for _, bad := range []string{"from=-1", "from=x", "limit=0", "limit=9999"} {
		res := get(t, s, "GET", "/api/s/demo.jsonl/items?"+bad)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, bad)
	}
	res := get(t, s, "GET", "/s/nope.jsonl/")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body(t, res), `no such session "nope.jsonl"`)

	var cs struct {
		Compactions []Compaction  `json:"compactions"`
		Prompts     []PromptEvent `json:"prompts"`
	}
	decode(t, ok(t, s, "/api/s/demo.jsonl/compactions"), &cs)
	require.Len(t, cs.Compactions, 1)
	require.Equal(t, int64(41), cs.Compactions[0].Checkpoint)
	require.Equal(t, []int64{43}, cs.Compactions[0].Calls)
	require.Len(t, cs.Prompts, 2)
}

// wire is what host request FILE --at SEQ prints.
func wire(t testing.TB, path string, seq int64) string {
	t.Helper()
	sess, err := Load(path)
	require.NoError(t, err)
	req, err := host.RequestAt(sess.Log.Events(), seq, sess.ID)
	require.NoError(t, err)
	b, err := llm.EncodeRequest(req)
	require.NoError(t, err)
	return string(b) + "\n"
}

func TestRequestPageAndAPI(t *testing.T) {
	path := demoPath(t)
	s := newServer(t, Options{Files: []string{path}})
	settlements := []int64{6, 12, 17, 25, 31, 36, 48}
	for i, seq := range settlements {
		n := strconv.Itoa(i + 1)
		require.Equal(t, wire(t, path, seq), ok(t, s, "/api/s/demo.jsonl/requests/"+n+"/body"), "request %s", n)
		var r Request
		decode(t, ok(t, s, "/api/s/demo.jsonl/requests/"+n), &r)
		require.Equal(t, seq, r.Seq)
		require.Equal(t, 7, r.Count)
		require.Equal(t, wire(t, path, seq), r.Body+"\n")
		require.NotNil(t, r.Tokens, "the meter's breakdown")
		b := r.Tokens.Breakdown
		require.Equal(t, r.Tokens.SurfaceTokens, b.System+b.User+b.Assistant+b.ToolResults)
		require.NotNil(t, r.Usage, "the demo reports usage")
		if i > 0 {
			require.Equal(t, settlements[i-1], r.Prev)
			require.NotEmpty(t, r.Diff)
		}
		page := ok(t, s, "/s/demo.jsonl/requests?n="+n)
		require.Contains(t, page, "Request "+n+" of 7")
		require.Contains(t, page, "host request FILE --at "+strconv.FormatInt(seq, 10))
		require.Contains(t, page, `<pre id="raw" class="body" hidden>`)
		require.Contains(t, page, "provider (reported)")
	}
	// A request named by the seq of its header lands on its settlement.
	page := ok(t, s, "/s/demo.jsonl/requests?at=24")
	require.Contains(t, page, "Request 4 of 7")
	// A compaction's summarization request, by its plugin/call seq.
	page = ok(t, s, "/s/demo.jsonl/requests?at=43")
	require.Contains(t, page, "Summarization request (plugin/call at seq 43)")
	require.Contains(t, page, "You are now the context compaction engine")
	require.Equal(t, wire(t, path, 43), ok(t, s, "/api/s/demo.jsonl/calls/43/body"))
	require.Equal(t, http.StatusNotFound, get(t, s, "GET", "/api/s/demo.jsonl/calls/42/body").StatusCode)
	require.Contains(t, ok(t, s, "/s/demo.jsonl/"), `<a href="/s/demo.jsonl/requests?at=43">summarization request (seq 43)</a>`)
	page = ok(t, s, "/s/demo.jsonl/requests?n=4")
	require.Contains(t, page, "Diff against request 3 (seq 17)")
	require.Contains(t, page, "Answer like a pirate.")

	for target, code := range map[string]int{
		"/s/demo.jsonl/requests?n=0":         http.StatusNotFound,
		"/s/demo.jsonl/requests?n=8":         http.StatusNotFound,
		"/s/demo.jsonl/requests?n=x":         http.StatusBadRequest,
		"/s/demo.jsonl/requests?at=x":        http.StatusBadRequest,
		"/api/s/demo.jsonl/requests/99/body": http.StatusNotFound,
		"/api/s/other.jsonl/requests/1/body": http.StatusNotFound,
	} {
		res := get(t, s, "GET", target)
		require.Equal(t, code, res.StatusCode, target)
		require.NotEmpty(t, body(t, res), "an error says what is wrong")
	}
}

func TestTokensPageAndAPI(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	var out struct {
		Window    int64   `json:"window"`
		Threshold int64   `json:"threshold"`
		Points    []Point `json:"points"`
		Marks     []Mark  `json:"marks"`
	}
	decode(t, ok(t, s, "/api/s/demo.jsonl/tokens"), &out)
	require.Equal(t, int64(8192), out.Window)
	require.Positive(t, out.Threshold)
	require.Less(t, out.Threshold, out.Window)
	require.Len(t, out.Points, 7)
	for i, p := range out.Points {
		require.Equal(t, i+1, p.Index)
		require.Positive(t, p.Tokens)
		require.NotNil(t, p.Usage)
	}
	require.Greater(t, out.Points[5].Tokens, out.Points[6].Tokens, "the compaction shrank the context")
	require.Equal(t, []Mark{{Seq: 22, Kind: "prompt", Label: "prompt changed (node 0 replaced)"}, {Seq: 42, Kind: "compaction", Label: "compaction cmp-a2c90071fe73c49c"}},
		[]Mark{out.Marks[1], out.Marks[0]})

	page := ok(t, s, "/s/demo.jsonl/tokens")
	require.Equal(t, 7, strings.Count(page, "<circle "))
	require.Equal(t, 7, strings.Count(page, `<rect class="usage"`))
	require.Contains(t, page, `<line class="window"`)
	require.Contains(t, page, `<line class="threshold"`)
	require.Contains(t, page, `<line class="mark compaction"`)
	require.Contains(t, page, `<line class="mark prompt"`)
	require.Contains(t, page, `<a href="/s/demo.jsonl/requests?n=7" class="point">`)

	// Scaled to the data, the window (far above the demo's contexts) is
	// not drawn.
	fit := ok(t, s, "/s/demo.jsonl/tokens?scale=data")
	require.Equal(t, 7, strings.Count(fit, "<circle "))
	require.NotContains(t, fit, `<line class="window"`)
	require.Contains(t, fit, `href="/s/demo.jsonl/tokens">Scale to the context window</a>`)
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := copyDemo(t, dir, "demo.jsonl")
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	s := newServer(t, Options{Dir: dir})
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		for _, target := range []string{"/", "/s/demo.jsonl/", "/api/s/demo.jsonl/items", "/api/s/demo.jsonl/requests/1/body"} {
			res := get(t, s, m, target)
			require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, m+" "+target)
			require.Equal(t, "GET, HEAD", res.Header.Get("Allow"))
		}
	}
	for _, target := range []string{"/", "/s/demo.jsonl/", "/s/demo.jsonl/requests?n=3", "/s/demo.jsonl/tokens", "/api/s/demo.jsonl/tokens"} {
		ok(t, s, target)
	}
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(before), sha256.Sum256(after), "serving changes no session")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "and writes no file beside it")
}

func TestHostAndToken(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	for _, h := range []string{"evil.example", "evil.example:80", "10.0.0.1:8383"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = h
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusForbidden, w.Code, "a loopback server refuses Host %s (DNS rebinding)", h)
	}
	for _, h := range []string{"localhost:8383", "127.0.0.1:8383", "[::1]:8383"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = h
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, h)
	}

	p := newServer(t, Options{Files: []string{demoPath(t)}, Public: true, Token: "s3cret"})
	serve := func(target, cookie string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", target, nil)
		r.Host = "inspector.example:8383"
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: "weir_token", Value: cookie})
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		return w
	}
	require.Equal(t, http.StatusUnauthorized, serve("/", "").Code)
	require.Equal(t, http.StatusUnauthorized, serve("/?token=wrong", "").Code)
	require.Equal(t, http.StatusUnauthorized, serve("/api/sessions", "wrong").Code)
	w := serve("/s/demo.jsonl/?token=s3cret", "")
	require.Equal(t, http.StatusSeeOther, w.Code)
	require.Equal(t, "/s/demo.jsonl/", w.Header().Get("Location"), "the token leaves the address")
	c := w.Result().Cookies()
	require.Len(t, c, 1)
	require.True(t, c[0].HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c[0].SameSite)
	require.Equal(t, http.StatusOK, serve("/s/demo.jsonl/", c[0].Value).Code)
}

func TestHostileContentIsEscaped(t *testing.T) {
	dir := t.TempDir()
	hostileSession(t, dir)
	copyDemo(t, dir, `x"><img src=x onerror=alert(1)>?#.jsonl`)
	s := newServer(t, Options{Dir: dir})
	list := ok(t, s, "/")
	require.Contains(t, list, `<a href="/s/x%22%3E%3Cimg%20src=x%20onerror=alert%281%29%3E%3F%23.jsonl/">x&#34;&gt;&lt;img src=x onerror=alert(1)&gt;?#.jsonl</a>`,
		"a hostile file name is escaped in the link and the text")
	ok(t, s, "/s/x%22%3E%3Cimg%20src=x%20onerror=alert%281%29%3E%3F%23.jsonl/")
	pages := map[string]string{}
	for _, target := range []string{"/", "/s/hostile.jsonl/", "/s/hostile.jsonl/items?from=0", "/s/hostile.jsonl/requests?n=1",
		"/s/hostile.jsonl/requests?n=2", "/s/hostile.jsonl/tokens", "/s/hostile.jsonl/shadowed?c=cmp-a2c90071fe73c49c"} {
		pages[target] = ok(t, s, target)
	}
	for target, page := range pages {
		for _, raw := range []string{"<script>document", "<script>window", "<img", "<svg onload", "<iframe", "<style>", `href="javascript:`, "\u202E", "\u2066"} {
			require.NotContains(t, page, raw, "%s shows %q unescaped", target, raw)
		}
		require.LessOrEqual(t, strings.Count(page, "<script"), 1, "%s: only the inspector's own script", target)
	}
	traj := pages["/s/hostile.jsonl/"]
	require.Contains(t, traj, "&lt;script&gt;document.title=&#34;pwned-user&#34;;alert(1)&lt;/script&gt;")
	require.Contains(t, traj, "invoice&lt;U&#43;202E&gt;fdp.exe", "a bidi control is shown, not obeyed")
	require.Contains(t, traj, "ls&lt;img src=x onerror=window.__xss=3&gt;")
	require.Contains(t, traj, "&lt;svg onload=window.__xss=6&gt;", "the hostile plugin name of the failure")
	require.Contains(t, traj, "&lt;iframe src=&#34;javascript:window.parent.__xss=7&#34;&gt;&lt;/iframe&gt;")
	require.Contains(t, traj, "&lt;script&gt;window.__xss=&#34;prompt&#34;&lt;/script&gt;")
	require.Contains(t, pages["/s/hostile.jsonl/requests?n=1"], "&lt;script&gt;document.title")

	// The JSON endpoints carry the text as data.
	var out struct {
		Items []Item `json:"items"`
	}
	decode(t, ok(t, s, "/api/s/hostile.jsonl/items"), &out)
	found := false
	for _, it := range out.Items {
		if it.Kind == ItemMessage && strings.HasPrefix(it.Text, xssUser) {
			found = true
		}
	}
	require.True(t, found)
}

func TestLiveUpdates(t *testing.T) {
	dir := t.TempDir()
	path := copyDemo(t, dir, "live.jsonl")
	s := newServer(t, Options{Dir: dir, Poll: 10 * time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/s/live.jsonl/live", nil)
	require.NoError(t, err)
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	rd := bufio.NewReader(res.Body)
	next := func() (string, string) {
		var ev, data string
		for {
			line, err := rd.ReadString('\n')
			require.NoError(t, err)
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && ev != "":
				return ev, data
			case strings.HasPrefix(line, "event: "):
				ev = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
	}
	ev, data := next()
	require.Equal(t, "hello", ev)
	require.Equal(t, `{"compactions":1,"events":51,"requests":7,"turns":5}`, data, "the whole log's counters")

	appendTurn(t, path, "a question while the page is open", "an answer that streams in")
	ev, data = next()
	require.Equal(t, "grow", ev)
	require.Equal(t, `{"compactions":1,"events":57,"requests":8,"turns":6}`, data)
	frag := ok(t, s, "/s/live.jsonl/items?from=51")
	require.Contains(t, frag, "Turn 6")
	require.Contains(t, frag, "a question while the page is open")
	require.Contains(t, frag, "an answer that streams in")
}
