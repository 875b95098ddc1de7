package inspect

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

//go:embed assets
var assets embed.FS

// PageSize is the number of trajectory items a page (and each further
// fetch) carries.
const PageSize = 200

// CSP is the Content-Security-Policy of every response: scripts, styles
// and connections from the inspector itself only; no inline script or
// style, no frames, no forms, no plugins.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configure a Server.
type Options struct {
	// Files are session files to serve; Dir a folder whose *.jsonl files
	// are served (read again on every sessions page).
	Files []string
	Dir   string
	// Token, when set, is required of every request: as the "token" query
	// parameter once (it is then kept in a cookie) or in the cookie.
	Token string
	// Public accepts any Host header; otherwise only loopback names are
	// accepted (a guard against DNS rebinding).
	Public bool
	// Poll is how often a live page's session file is checked for growth
	// (250ms when zero).
	Poll time.Duration
	// Models is how many sessions' whole models are kept in memory, the
	// least recently used evicted first (DefaultModels when zero).
	Models int
	// Prices, when set, price each request's and each turn's reported
	// usage (eval's price table); nil shows no cost.
	Prices *eval.Prices
}

// DefaultModels is how many whole session models a server keeps.
const DefaultModels = 8

// SessionsPage is the number of sessions a sessions page lists.
const SessionsPage = 100

// inlineBudget is how many bytes of session files a sessions page reads to
// summarize files not yet indexed before it is served; the index is built
// in the background for the rest, so the first page of a big folder does
// not wait for it.
const inlineBudget = 1 << 20

// Server is the read-only web inspector. It is an http.Handler.
type Server struct {
	o     Options
	mux   *http.ServeMux
	pages *template.Template

	mu    sync.Mutex
	cache map[string]*entry   // models, at most o.Models of them loaded
	index map[string]*indexed // summaries, by name
	tick  int64               // the LRU's clock
	wake  chan struct{}       // the indexer has files to read

	done      chan struct{} // closed by Close: live streams end
	closeOnce sync.Once
}

// Close ends the live streams (server-sent events) the server is serving,
// so an http.Server's Shutdown need not wait for them. The pages stay
// served.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.done) }) }

type entry struct {
	path  string
	ready chan struct{} // closed when the first read ended: model or err is set
	err   error
	used  int64 // the LRU clock at the last use

	// mu is held shared by every reader of model and whole by the fold of
	// what the file gained (see open).
	mu    sync.RWMutex
	model *Model
	ver   version
}

// indexed is a session file's summary, for the version of the file it was
// computed from.
type indexed struct {
	path string
	size int64
	mod  time.Time
	sum  Summary
}

// New returns a server for the sessions o names.
func New(o Options) (*Server, error) {
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	t, err := template.New("").Funcs(funcs).Funcs(costFunc(o.Prices)).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("inspector templates: %w", err)
	}
	if o.Models <= 0 {
		o.Models = DefaultModels
	}
	s := &Server{o: o, pages: t, cache: map[string]*entry{}, index: map[string]*indexed{}, wake: make(chan struct{}, 1),
		mux: http.NewServeMux(), done: make(chan struct{})}
	go s.indexer()
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.sessionsPage)
	s.mux.HandleFunc("GET /s/{name}/{$}", s.trajectoryPage)
	s.mux.HandleFunc("GET /s/{name}/items", s.itemsFragment)
	s.mux.HandleFunc("GET /s/{name}/shadowed", s.shadowedFragment)
	s.mux.HandleFunc("GET /s/{name}/requests", s.requestPage)
	s.mux.HandleFunc("GET /s/{name}/tokens", s.tokensPage)
	s.mux.HandleFunc("GET /s/{name}/live", s.live)
	s.mux.HandleFunc("GET /api/sessions", s.apiSessions)
	s.mux.HandleFunc("GET /api/s/{name}/summary", s.apiSummary)
	s.mux.HandleFunc("GET /api/s/{name}/items", s.apiItems)
	s.mux.HandleFunc("GET /api/s/{name}/compactions", s.apiCompactions)
	s.mux.HandleFunc("GET /api/s/{name}/requests/{n}", s.apiRequest)
	s.mux.HandleFunc("GET /api/s/{name}/requests/{n}/body", s.apiBody)
	s.mux.HandleFunc("GET /api/s/{name}/requests/{n}/parts/{part...}", s.apiRequestPart)
	s.mux.HandleFunc("GET /api/s/{name}/calls/{seq}/body", s.apiCallBody)
	s.mux.HandleFunc("GET /api/s/{name}/tokens", s.apiTokens)
	s.mux.HandleFunc("GET /api/s/{name}/events/{seq}", s.apiEvent)
	s.mux.HandleFunc("GET /api/s/{name}/events/{seq}/text", s.apiEventText)
	return s, nil
}

// ServeHTTP serves GET and HEAD only, with the security headers, after
// the host and token checks.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the inspector is read-only: only GET and HEAD are served", http.StatusMethodNotAllowed)
		return
	}
	if !s.o.Public && !loopbackHost(r.Host) {
		http.Error(w, "the inspector answers only to a loopback host name (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
		return
	}
	if s.o.Token != "" {
		if q := r.URL.Query().Get("token"); q != "" && equal(q, s.o.Token) {
			http.SetCookie(w, &http.Cookie{Name: "weir_token", Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			v := u.Query()
			v.Del("token")
			u.RawQuery = v.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie("weir_token")
		if err != nil || !equal(c.Value, s.o.Token) {
			http.Error(w, "a token is required: open the address printed by host serve (it carries ?token=...)", http.StatusUnauthorized)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// source is a session file the server serves, under its name in URLs.
type source struct {
	name, path string
	refused    string // why the file is not served (a symlink leading out of --dir)
}

// sources lists the session files: Files, then the *.jsonl files of Dir,
// read again on each call. A symbolic link in Dir is followed only to a
// file inside Dir: one leading out of it is listed as refused, so the
// inspector never serves what the folder does not hold.
func (s *Server) sources() []source {
	var out []source
	taken := map[string]bool{}
	add := func(p, refused string) {
		n := filepath.Base(p)
		for i := 2; taken[n]; i++ {
			n = fmt.Sprintf("%s~%d", filepath.Base(p), i)
		}
		taken[n] = true
		out = append(out, source{name: n, path: p, refused: refused})
	}
	for _, f := range s.o.Files {
		add(f, "")
	}
	if s.o.Dir != "" {
		ents, _ := os.ReadDir(s.o.Dir)
		root, rerr := filepath.EvalSymlinks(s.o.Dir)
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			p := filepath.Join(s.o.Dir, e.Name())
			refused := ""
			if e.Type()&fs.ModeSymlink != 0 {
				refused = "a symbolic link that does not lead to a file inside the folder: not followed"
				if t, err := filepath.EvalSymlinks(p); err == nil && rerr == nil {
					if rel, err := filepath.Rel(root, t); err == nil && filepath.IsLocal(rel) {
						if st, err := os.Stat(t); err == nil && st.Mode().IsRegular() {
							refused = ""
						}
					}
				}
				if rerr != nil {
					continue
				}
			}
			add(p, refused)
		}
	}
	return out
}

// path returns the file a session name stands for.
func (s *Server) path(name string) (string, error) {
	for _, src := range s.sources() {
		if src.name == name {
			if src.refused != "" {
				return "", fmt.Errorf("%w: %q is %s", errNotFound, name, src.refused)
			}
			return src.path, nil
		}
	}
	return "", fmt.Errorf("%w %q", errNoSession, name)
}

var errNoSession = errors.New("no such session")

// model returns the session's model as its file is now, for a caller
// that reads it while the file does not change (tests); pages use open.
func (s *Server) model(name string) (*Model, error) {
	m, release, err := s.openName(name)
	if err != nil {
		return nil, err
	}
	release()
	return m, nil
}

// openName is open of the file a session name stands for.
func (s *Server) openName(name string) (*Model, func(), error) {
	path, err := s.path(name)
	if err != nil {
		return nil, nil, err
	}
	return s.open(name, path)
}

// open returns the session's model brought up to the file as it is now,
// held for reading until release is called (release exactly once; do not
// open another model of the same session meanwhile). A file that grew is
// folded on from where the model stopped (version.grow); one that was
// replaced, truncated or rewritten is read again whole.
func (s *Server) open(name, path string) (m *Model, release func(), err error) {
	for tries := 0; ; tries++ {
		st, err := os.Stat(path)
		if err != nil {
			return nil, nil, err
		}
		e := s.entryFor(name, path)
		<-e.ready
		if e.err != nil {
			if !e.ver.current(st) && tries < 3 {
				s.drop(name, e) // the file changed since it failed: read it again
				continue
			}
			return nil, nil, e.err
		}
		e.mu.RLock()
		if e.ver.current(st) {
			return e.model, e.mu.RUnlock, nil
		}
		e.mu.RUnlock()
		e.mu.Lock()
		grown, gerr := true, error(nil)
		if !e.ver.current(st) {
			grown, gerr = e.ver.grow(path, e.model)
		}
		e.mu.Unlock()
		if (gerr != nil || !grown) && tries < 3 {
			s.drop(name, e) // read it again whole
			continue
		}
		// Folded up to the file as it was a moment ago (a file that keeps
		// growing is folded on by the next open), or, for a file that
		// keeps being rewritten, as it was when last read.
		e.mu.RLock()
		return e.model, e.mu.RUnlock, nil
	}
}

// drop removes e from the cache unless it was replaced already; its
// readers keep its model until they release it.
func (s *Server) drop(name string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache[name] == e {
		delete(s.cache, name)
	}
}

// entryFor returns the cache entry of the session, starting its first read
// when there is none: one whole read of a file however many requests
// want it.
func (s *Server) entryFor(name, path string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick++
	if e := s.cache[name]; e != nil && e.path == path {
		e.used = s.tick
		return e
	}
	delete(s.cache, name)
	s.evict(s.o.Models - 1)
	e := &entry{path: path, ready: make(chan struct{}), used: s.tick}
	s.cache[name] = e
	go func() {
		defer close(e.ready)
		sess, ver, err := loadVersioned(path)
		e.ver = ver
		if err != nil {
			e.err = err
			return
		}
		e.model = Build(sess)
		e.model.Summary.Name = name
	}()
	return e
}

// evict drops the least recently used loaded models beyond keep; s.mu is
// held. A request that holds one keeps it until it is done; the next one
// loads it again.
func (s *Server) evict(keep int) {
	for {
		loaded := 0
		var lru string
		var oldest int64
		for n, e := range s.cache {
			select {
			case <-e.ready:
			default:
				continue // still loading: not counted
			}
			loaded++
			if lru == "" || e.used < oldest {
				lru, oldest = n, e.used
			}
		}
		if loaded <= keep {
			return
		}
		delete(s.cache, lru)
	}
}

// cached reports whether a model of the file is in memory (of any
// version of it).
func (s *Server) cached(name, path string) bool {
	s.mu.Lock()
	e := s.cache[name]
	s.mu.Unlock()
	if e == nil || e.path != path {
		return false
	}
	select {
	case <-e.ready:
		return e.err == nil
	default:
		return false
	}
}

// firstScreen returns the model to render a trajectory's first page from:
// the whole session when it is loaded, else, while it loads, a model of
// the file's first bytes holding at least want items (a log prefix is a
// log: jsonl drops the cut line as a torn tail). partial reports the
// latter.
func (s *Server) firstScreen(name string, want int) (m *Model, release func(), partial bool, err error) {
	path, err := s.path(name)
	if err != nil {
		return nil, nil, false, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, false, err
	}
	e := s.entryFor(name, path)
	select {
	case <-e.ready:
	default:
		if m := prefixModel(path, st.Size(), want); m != nil {
			m.Summary.Name = name
			return m, func() {}, true, nil
		}
	}
	m, release, err = s.open(name, path)
	return m, release, false, err
}

// prefixModel builds a model of the first bytes of a session file, reading
// more until it holds more than want items; nil when that takes most of
// the file.
func prefixModel(path string, size int64, want int) *Model {
	for n := int64(1 << 20); n < size/2; n *= 4 {
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		ld, err := jsonl.Read(io.LimitReader(f, n))
		f.Close()
		if err != nil {
			return nil
		}
		m := Build(&Session{ID: ld.Header.ID, Path: path, Log: ld.Log})
		// A compaction cut off by the prefix is not open: leave it out.
		m.Items = slices.DeleteFunc(m.Items, func(it Item) bool { return it.Kind == ItemCompaction && it.Compaction.End == 0 })
		if len(m.Items) > want {
			return m
		}
	}
	return nil
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errNoSession), errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
)

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.pages.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err == nil {
		err = (*jsontext.Value)(&b).Indent()
	}
	if err != nil {
		http.Error(w, "encoding JSON: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// summary is the model's summary with the meter's total.
func (m *Model) summary() Summary {
	out := m.Summary
	if t := m.Tokens(); t != nil {
		out.Tokens = t.TotalTokens
	}
	return out
}

// summaries lists the sessions of a page (0-based) and how many there
// are. A session indexed for its file's current version shows its
// figures; one not yet indexed is summarized now while the page's
// inlineBudget lasts, else shown from its header line and file alone
// (Pending) and left to the indexer. A file that does not load is listed
// with its error.
func (s *Server) summaries(page int) ([]Summary, int, int) {
	all := s.sources()
	from := min(len(all), page*SessionsPage)
	srcs := all[from:min(len(all), from+SessionsPage)]
	out := make([]Summary, 0, len(srcs))
	budget := int64(inlineBudget)
	pending := 0
	for _, src := range srcs {
		if src.refused != "" {
			out = append(out, Summary{Name: src.name, Error: src.refused})
			continue
		}
		st, err := os.Stat(src.path)
		if err != nil {
			out = append(out, Summary{Name: src.name, Error: err.Error()})
			continue
		}
		if sum, ok := s.indexedSummary(src, st); ok {
			out = append(out, sum)
			continue
		}
		if st.Size() <= budget {
			budget -= st.Size()
			out = append(out, s.summarize(src, st))
			continue
		}
		budget = 0
		pending++
		out = append(out, headerSummary(src, st))
	}
	if pending > 0 {
		s.kick()
	}
	return out, len(all), pending
}

func (s *Server) indexedSummary(src source, st os.FileInfo) (Summary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.index[src.name]
	if x == nil || x.path != src.path || x.size != st.Size() || !x.mod.Equal(st.ModTime()) {
		return Summary{}, false
	}
	return x.sum, true
}

// summarize computes a file's summary and indexes it: from its model when
// one is in memory (folded on over what the file gained) or when the file
// changed since it was indexed (it is being written: its model is kept in
// the LRU of models, so its next growth is folded from its tail), else
// from a model built for this and dropped (so indexing a folder never
// holds more than one extra model).
func (s *Server) summarize(src source, st os.FileInfo) Summary {
	var sum Summary
	s.mu.Lock()
	x := s.index[src.name]
	s.mu.Unlock()
	if s.cached(src.name, src.path) || (x != nil && x.path == src.path) {
		m, release, err := s.open(src.name, src.path)
		if err != nil {
			sum = Summary{Name: src.name, Error: err.Error()}
		} else {
			sum = m.summary()
			release()
		}
	} else if sess, err := Load(src.path); err != nil {
		sum = Summary{Name: src.name, Error: err.Error()}
	} else {
		m := Build(sess)
		m.Summary.Name = src.name
		sum = m.summary()
	}
	s.mu.Lock()
	s.index[src.name] = &indexed{path: src.path, size: st.Size(), mod: st.ModTime(), sum: sum}
	s.mu.Unlock()
	return sum
}

// headerSummary is what a file's first line and its metadata say of it.
func headerSummary(src source, st os.FileInfo) Summary {
	sum := Summary{Name: src.name, Pending: true, LastActivity: st.ModTime().UnixMilli()}
	f, err := os.Open(src.path)
	if err != nil {
		return sum
	}
	defer f.Close()
	line, _ := bufio.NewReaderSize(io.LimitReader(f, 1<<20), 64<<10).ReadSlice('\n')
	if h, err := jsonl.ParseHeader(bytes.TrimSpace(line)); err == nil {
		sum.ID = h.ID
	}
	return sum
}

func (s *Server) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// indexer summarizes, one file at a time, the sessions not indexed for
// their current version, until the server closes.
func (s *Server) indexer() {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for _, src := range s.sources() {
			select {
			case <-s.done:
				return
			default:
			}
			if src.refused != "" {
				continue
			}
			st, err := os.Stat(src.path)
			if err != nil {
				continue
			}
			if _, ok := s.indexedSummary(src, st); !ok {
				s.summarize(src, st)
			}
		}
	}
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	page, err := pageNumber(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	sums, total, pending := s.summaries(page)
	last := max(0, (total-1)/SessionsPage)
	s.render(w, "sessions.html", map[string]any{"Title": "Sessions", "Sessions": sums, "Total": total, "Pending": pending,
		"Page": page + 1, "Pages": last + 1, "Prev": page, "Next": map[bool]int{true: page + 2}[page < last]})
}

func (s *Server) apiSessions(w http.ResponseWriter, r *http.Request) {
	page, err := pageNumber(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	sums, total, pending := s.summaries(page)
	writeJSON(w, map[string]any{"sessions": sums, "total": total, "pending": pending, "page": page + 1, "pageSize": SessionsPage})
}

// pageNumber is the 0-based page a ?page=N (1-based) names.
func pageNumber(r *http.Request) (int, error) {
	v := r.URL.Query().Get("page")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: page=%q is not a page number (1, 2, …)", errBadRequest, v)
	}
	return n - 1, nil
}

func (s *Server) apiSummary(w http.ResponseWriter, r *http.Request) {
	m, release, err := s.openName(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	writeJSON(w, m.summary())
}

// page returns the items from seq from on, at most limit of them, and the
// seq the next page starts at (-1 when these are the last).
func page(items []Item, from int64, limit int) ([]Item, int64) {
	i := sort.Search(len(items), func(i int) bool { return items[i].Seq >= from })
	j := min(len(items), i+limit)
	next := int64(-1)
	if j < len(items) {
		next = items[j].Seq
	}
	return items[i:j], next
}

func pageArgs(r *http.Request) (from int64, limit int, err error) {
	limit = PageSize
	q := r.URL.Query()
	if v := q.Get("from"); v != "" {
		if from, err = strconv.ParseInt(v, 10, 64); err != nil || from < 0 {
			return 0, 0, fmt.Errorf("%w: from=%q is not a seq", errBadRequest, v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 5000 {
			return 0, 0, fmt.Errorf("%w: limit=%q is not a number from 1 to 5000", errBadRequest, v)
		}
	}
	return from, limit, nil
}

type trajectoryData struct {
	Title   string
	Name    string
	Model   *Model
	Items   []Item
	Next    int64
	Partial bool // the page was rendered while the whole log was still loading
	// Filter is the page's filter; Query its URL query ("" for none,
	// else starting with "&"); Kinds the kinds it offers.
	Filter Filter
	Query  string
	Kinds  []string
}

func (s *Server) trajectory(w http.ResponseWriter, r *http.Request, tmpl string) {
	name := r.PathValue("name")
	from, limit, err := pageArgs(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var (
		m       *Model
		release func()
		partial bool
	)
	f := filterArgs(r)
	if tmpl == "trajectory.html" && from == 0 && f.none() {
		m, release, partial, err = s.firstScreen(name, limit)
	} else {
		m, release, err = s.openName(name)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	all := m.Items
	if !f.none() {
		all = m.Filter(f)
	}
	items, next := page(all, from, limit)
	items = m.Fill(items)
	s.render(w, tmpl, trajectoryData{Title: name, Name: name, Model: m, Items: items, Next: next, Partial: partial,
		Filter: f, Query: f.query(), Kinds: filterKinds})
}

func filterArgs(r *http.Request) Filter {
	q := r.URL.Query()
	return Filter{Kind: q.Get("kind"), Role: q.Get("role"), Text: q.Get("q")}
}

func (s *Server) trajectoryPage(w http.ResponseWriter, r *http.Request) {
	s.trajectory(w, r, "trajectory.html")
}

func (s *Server) itemsFragment(w http.ResponseWriter, r *http.Request) {
	s.trajectory(w, r, "items")
}

func (s *Server) apiItems(w http.ResponseWriter, r *http.Request) {
	m, release, err := s.openName(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	from, limit, err := pageArgs(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	items, next := page(m.Items, from, limit)
	items = m.Fill(items)
	writeJSON(w, map[string]any{"items": items, "next": next, "events": m.Summary.Events})
}

func (s *Server) apiCompactions(w http.ResponseWriter, r *http.Request) {
	m, release, err := s.openName(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	cs := m.Compactions
	if cs == nil {
		cs = []*Compaction{}
	}
	writeJSON(w, map[string]any{"compactions": cs, "prompts": m.Prompts})
}

// shadowedFragment renders the messages a compaction shadowed.
func (s *Server) shadowedFragment(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	m, release, err := s.openName(name)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	id := r.URL.Query().Get("c")
	i := slices.IndexFunc(m.Compactions, func(c *Compaction) bool { return c.ID == id })
	if i < 0 {
		s.fail(w, fmt.Errorf("%w: session %q has no compaction %q", errNotFound, name, id))
		return
	}
	var items []Item
	for _, seq := range m.Compactions[i].Shadowed {
		j := sort.Search(len(m.Items), func(k int) bool { return m.Items[k].Seq >= seq })
		if j < len(m.Items) && m.Items[j].Seq == seq {
			items = append(items, m.Items[j])
		}
	}
	s.render(w, "items", trajectoryData{Name: name, Model: m, Items: m.Fill(items), Next: -1})
}

type requestData struct {
	Title string
	Name  string
	Model *Model
	Req   *Request
}

// opened opens the model of the session the request names, or answers
// the error; the caller releases the model when it is done with it.
func (s *Server) opened(w http.ResponseWriter, r *http.Request) (*Model, func(), bool) {
	m, release, err := s.openName(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return nil, nil, false
	}
	return m, release, true
}

// requestArg returns the request the page names (?n=N or ?at=SEQ) or
// the path value (arg), of the session's model m.
func (s *Server) requestArg(w http.ResponseWriter, r *http.Request, m *Model, arg string) (*Request, bool) {
	name := r.PathValue("name")
	var err error
	n := 0
	if v := r.URL.Query().Get("at"); v != "" && arg == "" {
		seq, err := strconv.ParseInt(v, 10, 64)
		if err != nil || seq < 0 {
			s.fail(w, fmt.Errorf("%w: at=%q is not a seq (a number from 0 on)", errBadRequest, v))
			return nil, false
		}
		if e, ok := m.Session.Log.Event(seq); ok && e.Type == host.TypePluginCall {
			req, err := m.Call(seq)
			if err != nil {
				s.fail(w, fmt.Errorf("%w: %v", errNotFound, err))
				return nil, false
			}
			return req, true
		}
		n = m.IndexOf(seq)
	} else {
		if arg == "" {
			arg = cmpOr(r.URL.Query().Get("n"), "1")
		}
		if n, err = strconv.Atoi(arg); err != nil {
			s.fail(w, fmt.Errorf("%w: request %q is not a number", errBadRequest, arg))
			return nil, false
		}
	}
	if n < 1 || n > len(m.Requests) {
		s.fail(w, fmt.Errorf("%w: session %q has no request %d (it has %d)", errNotFound, name, n, len(m.Requests)))
		return nil, false
	}
	req, err := m.Request(n)
	if err != nil {
		s.fail(w, err)
		return nil, false
	}
	return req, true
}

func (s *Server) requestPage(w http.ResponseWriter, r *http.Request) {
	m, release, ok := s.opened(w, r)
	if !ok {
		return
	}
	defer release()
	req, ok := s.requestArg(w, r, m, "")
	if !ok {
		return
	}
	name := r.PathValue("name")
	title := name + " · request " + strconv.Itoa(req.Index)
	if req.Call {
		title = name + " · plugin call at seq " + strconv.FormatInt(req.Seq, 10)
	}
	s.render(w, "request.html", requestData{Title: title, Name: name, Model: m, Req: req})
}

func (s *Server) apiRequest(w http.ResponseWriter, r *http.Request) {
	m, release, ok := s.opened(w, r)
	if !ok {
		return
	}
	defer release()
	if req, ok := s.requestArg(w, r, m, r.PathValue("n")); ok {
		writeJSON(w, boundedJSON(req, r.PathValue("name")))
	}
}

// apiRequestPart serves whole one string the request's JSON cut short
// (its marker's URL): the pretty body, the diff, the prompt's texts, a
// message's text, reasoning or tool-call arguments.
func (s *Server) apiRequestPart(w http.ResponseWriter, r *http.Request) {
	m, release, ok := s.opened(w, r)
	if !ok {
		return
	}
	defer release()
	req, ok := s.requestArg(w, r, m, r.PathValue("n"))
	if !ok {
		return
	}
	name := r.PathValue("part")
	text, ok := req.part(name)
	if !ok {
		s.fail(w, fmt.Errorf("%w: request %d has no part %q", errNotFound, req.Index, name))
		return
	}
	download(w, r, "request-"+strconv.Itoa(req.Index)+"-"+strings.ReplaceAll(name, "/", "-"), ".txt")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, text)
}

// download marks a response as a file to save, named after the session.
func download(w http.ResponseWriter, r *http.Request, name, ext string) {
	if r.URL.Query().Get("download") != "" || ext == ".txt" {
		base := strings.TrimSuffix(r.PathValue("name"), ".jsonl")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": base + "-" + name + ext}))
	}
}

// eventArg returns the event the seq path value names.
func (s *Server) eventArg(w http.ResponseWriter, r *http.Request, m *Model) (surface.Event, bool) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 0 {
		s.fail(w, fmt.Errorf("%w: %q is not a seq", errBadRequest, r.PathValue("seq")))
		return surface.Event{}, false
	}
	e, ok := m.Session.Log.Event(seq)
	if !ok {
		s.fail(w, fmt.Errorf("%w: session %q has no event at seq %d", errNotFound, r.PathValue("name"), seq))
		return surface.Event{}, false
	}
	return e, true
}

// apiEvent serves one event whole (its data as the log holds it): what a
// page cut short links to.
func (s *Server) apiEvent(w http.ResponseWriter, r *http.Request) {
	m, release, ok := s.opened(w, r)
	if !ok {
		return
	}
	defer release()
	e, ok := s.eventArg(w, r, m)
	if !ok {
		return
	}
	data := jsontext.Value(e.Data)
	if !data.IsValid() {
		data = jsontext.Value("null")
	}
	v := map[string]any{"seq": e.Seq, "type": e.Type, "time": e.Time, "data": data}
	download(w, r, "seq-"+strconv.FormatInt(e.Seq, 10), ".json")
	w.Header().Set("Content-Type", "application/json")
	_ = json.MarshalWrite(w, v, json.Deterministic(true))
}

// apiEventText serves the whole text of the message or tool result at a
// seq as a plain-text download.
func (s *Server) apiEventText(w http.ResponseWriter, r *http.Request) {
	m, release, ok := s.opened(w, r)
	if !ok {
		return
	}
	defer release()
	e, ok := s.eventArg(w, r, m)
	if !ok {
		return
	}
	text, ok := m.Text(e.Seq)
	if !ok {
		s.fail(w, fmt.Errorf("%w: the event at seq %d (%s) holds no message", errNotFound, e.Seq, e.Type))
		return
	}
	download(w, r, "seq-"+strconv.FormatInt(e.Seq, 10), ".txt")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, text)
}

// apiBody serves the exact wire body with the trailing newline host
// request --at prints.
func (s *Server) apiBody(w http.ResponseWriter, r *http.Request) {
	m, release, ok := s.opened(w, r)
	if !ok {
		return
	}
	defer release()
	if req, ok := s.requestArg(w, r, m, r.PathValue("n")); ok {
		download(w, r, "request-"+strconv.Itoa(req.Index), ".json")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(req.Body + "\n"))
	}
}

// apiCallBody serves the exact wire body of a plugin's model call, named
// by its plugin/call seq, as host request --at prints it.
func (s *Server) apiCallBody(w http.ResponseWriter, r *http.Request) {
	m, release, err := s.openName(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil {
		s.fail(w, fmt.Errorf("%w: %q is not a seq", errBadRequest, r.PathValue("seq")))
		return
	}
	if e, ok := m.Session.Log.Event(seq); !ok || e.Type != host.TypePluginCall {
		s.fail(w, fmt.Errorf("%w: seq %d is not a plugin/call event", errNotFound, seq))
		return
	}
	req, err := m.Call(seq)
	if err != nil {
		s.fail(w, err)
		return
	}
	download(w, r, "call-"+strconv.FormatInt(seq, 10), ".json")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(req.Body + "\n"))
}

// TableRows is the number of requests a page of the tokens table lists.
const TableRows = 200

type tokensData struct {
	Title  string
	Name   string
	Model  *Model
	Chart  *Chart
	Points []Point
	// Rows are the table's page of Points: rows First to Last (1-based)
	// of page Page of Pages; Prev and Next the pages around it (0: none).
	Rows                    []Point
	First, Last             int
	Page, Pages, Prev, Next int
}

func (s *Server) tokensPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	m, release, err := s.openName(name)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	page, err := pageNumber(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	points, marks := m.Chart()
	d := tokensData{Title: name + " · tokens", Name: name, Model: m, Chart: drawChart(m, points, marks, r.URL.Query().Get("scale") == "data"), Points: points}
	d.Pages = max(1, (len(points)+TableRows-1)/TableRows)
	if page >= d.Pages {
		s.fail(w, fmt.Errorf("%w: page %d: the table has %d pages", errNotFound, page+1, d.Pages))
		return
	}
	from := page * TableRows
	d.Rows = points[from:min(len(points), from+TableRows)]
	d.First, d.Last, d.Page, d.Prev = from+1, from+len(d.Rows), page+1, page
	if page+1 < d.Pages {
		d.Next = page + 2
	}
	s.render(w, "tokens.html", d)
}

func (s *Server) apiTokens(w http.ResponseWriter, r *http.Request) {
	m, release, err := s.openName(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer release()
	points, marks := m.Chart()
	if marks == nil {
		marks = []Mark{}
	}
	writeJSON(w, map[string]any{"window": m.Window, "threshold": m.Threshold, "points": points, "marks": marks})
}

// counters is the JSON of the whole log's counters a live page shows.
func counters(m *Model) []byte {
	b, _ := json.Marshal(map[string]any{"events": m.Summary.Events, "turns": m.Summary.Turns,
		"requests": m.Summary.Requests, "compactions": m.Summary.Compactions}, json.Deterministic(true))
	return b
}

// live streams server-sent events: "hello" with the whole log's counters
// once it is read, then "grow" with them each time the session file grows
// or changes. The page fetches the items itself, from the last one it
// holds (see app.js): the events say only that there is more.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	path, err := s.path(name) // once: the folder is not listed again each tick
	if err != nil {
		s.fail(w, err)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported by this connection", http.StatusInternalServerError)
		return
	}
	// The stream reads the file as every page does (open): a grown file
	// is folded on from the model's end, once for all its readers.
	state := func() (int, []byte, error) {
		m, release, err := s.open(name, path)
		if err != nil {
			return 0, nil, err
		}
		defer release()
		return m.Summary.Events, counters(m), nil
	}
	last, hello, err := state()
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: hello\ndata: %s\n\n", hello)
	fl.Flush()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	beat := 0
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
		}
		n, c, err := state()
		if err != nil {
			continue // a file being rewritten; try again
		}
		if n != last {
			last = n
			fmt.Fprintf(w, "event: grow\ndata: %s\n\n", c)
			fl.Flush()
			continue
		}
		if beat++; beat*int(s.o.Poll/time.Millisecond) >= 15000 {
			beat = 0
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}
