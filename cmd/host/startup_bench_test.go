package cli

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// BenchmarkStartup runs the built command, "host run" on a new session
// against a loopback server, and measures the time from starting the
// process to the first byte of its model request. The process is killed at
// that byte.
//
//   - warm: the compilation cache already holds the plugins; each
//     iteration starts the command with the plugins of the default
//     configuration and with every plugin disabled (the floor of the rest
//     of startup), in rotating order, so that both see the same load.
//   - cold: an empty compilation cache each time (a first run).
//
// It reports medians: ms-to-request, the time to that byte; ms-to-output,
// the time to the first byte on standard error (the compile notice of a
// first run; the request time when nothing was written); and cpu-ms, the
// process's CPU time until it was killed, which a busy machine disturbs
// less than the wall time. In warm, the metrics of the plugin-free runs
// carry the prefix "off:", and on/off-wall and on/off-cpu are the ratios
// of the medians.
//
// WEIR_STARTUP_BASELINE names other builds of the command (a list, like
// PATH). Each iteration then starts every build once too, and the metrics
// of a baseline carry its file name as a prefix (host-old:ms-to-request);
// ns/op covers all of them:
//
//	git stash; go build -o host-old ./cmd/weir; git stash pop
//	WEIR_STARTUP_BASELINE=$PWD/host-old go test ./cmd/host -run '^$' -bench Startup -benchtime 10x
func BenchmarkStartup(b *testing.B) {
	builds := benchBuilds(b)
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			var runs []startRun
			for _, bld := range builds {
				for _, off := range []bool{false, true} {
					if off && cold {
						continue
					}
					prefix := bld.prefix
					if off {
						prefix += "off:"
					}
					s := newStarter(b, bld.path, off, "")
					if !cold {
						s.fill(b) // fills the cache; the page cache holds the binary
					}
					runs = append(runs, startRun{prefix: prefix, s: s})
				}
			}
			for i := 0; b.Loop(); i++ {
				for k := range runs {
					r := &runs[(i+k)%len(runs)]
					cache := r.s.warmCache
					if cold {
						cache = filepath.Join(r.s.dir, "cold-cache-"+strconv.Itoa(i))
					}
					res := r.s.run(b, cache)
					for m := range res {
						r.samples[m] = append(r.samples[m], res[m])
					}
				}
			}
			for _, r := range runs {
				for m, unit := range []string{"ms-to-request", "ms-to-output", "cpu-ms"} {
					b.ReportMetric(median(r.samples[m]), r.prefix+unit)
				}
			}
			if !cold {
				for i := 0; i+1 < len(runs); i += 2 {
					on, off := runs[i], runs[i+1]
					b.ReportMetric(median(on.samples[0])/median(off.samples[0]), on.prefix+"on/off-wall")
					b.ReportMetric(median(on.samples[2])/median(off.samples[2]), on.prefix+"on/off-cpu")
				}
			}
		})
	}
}

// build is one build of the command under test; a baseline's metrics
// carry its prefix.
type build struct{ prefix, path string }

// benchBuilds is the command under test, built here as it is installed
// (stripped, and without the test binary's tests, which hostBin carries),
// and the builds named by WEIR_STARTUP_BASELINE.
func benchBuilds(b *testing.B) []build {
	bin := filepath.Join(b.TempDir(), "weir")
	out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "../weir").CombinedOutput()
	require.NoError(b, err, string(out))
	builds := []build{{"", bin}}
	for _, old := range filepath.SplitList(os.Getenv("WEIR_STARTUP_BASELINE")) {
		builds = append(builds, build{filepath.Base(old) + ":", old})
	}
	return builds
}

// startRun is one starter of a benchmark and its samples: wall, first
// output (or wall again) and CPU.
type startRun struct {
	prefix  string
	s       *starter
	samples [3][]time.Duration
}

// BenchmarkResumedTurn measures a whole "weir run" turn on a resumed
// session of resumedNodes surface nodes: the process starts, loads the
// plugins from a warm compilation cache, restores the session from its
// log, runs one turn on the offline route (its context window raised far
// above the session, so nothing compacts) and exits. Each iteration runs
// the command with the default plugins and with every plugin disabled, in
// rotating order, each on a fresh copy of the same session file. With the
// plugins, the meter's state cache (meter-state/ in the compilation cache
// folder) holds the blob of that log, as after the turn that wrote it: a
// copy taken after one priming turn is put back before each iteration, so
// the state cache counts as on.
//
// It reports the medians of the wall time to the exit (ms-turn) and of
// the process's CPU (cpu-ms), the plugin-free ones prefixed "off:", and
// on/off-wall and on/off-cpu, the ratios of the medians.
// WEIR_STARTUP_BASELINE adds builds as in BenchmarkStartup. Run with
//
//	go test -run '^$' -bench BenchmarkResumedTurn -benchtime 6x ./cmd/host
func BenchmarkResumedTurn(b *testing.B) {
	var runs []startRun
	var resumers []*resumer
	for _, bld := range benchBuilds(b) {
		for _, off := range []bool{false, true} {
			prefix := bld.prefix
			if off {
				prefix += "off:"
			}
			s := newStarter(b, bld.path, off, "models:\n  offline:\n    contextWindow: 100000000\n")
			s.fill(b)
			resumers = append(resumers, newResumer(b, s))
			runs = append(runs, startRun{prefix: prefix, s: s})
		}
	}
	for i := 0; b.Loop(); i++ {
		for k := range runs {
			j := (i + k) % len(runs)
			b.StopTimer()
			resumers[j].reset(b)
			b.StartTimer()
			res := resumers[j].turn(b)
			for m := range res {
				runs[j].samples[m] = append(runs[j].samples[m], res[m])
			}
		}
	}
	for _, r := range runs {
		b.ReportMetric(median(r.samples[0]), r.prefix+"ms-turn")
		b.ReportMetric(median(r.samples[2]), r.prefix+"cpu-ms")
	}
	for i := 0; i+1 < len(runs); i += 2 {
		on, off := runs[i], runs[i+1]
		b.ReportMetric(median(on.samples[0])/median(off.samples[0]), on.prefix+"on/off-wall")
		b.ReportMetric(median(on.samples[2])/median(off.samples[2]), on.prefix+"on/off-cpu")
	}
}

// resumedNodes is the surface size of BenchmarkResumedTurn's session.
const resumedNodes = 1_300

// resumer holds a starter's primed session: the log after one turn of the
// command on the generated session, and the meter-state folder that turn
// left.
type resumer struct {
	s                       *starter
	session, primed         string
	primedState, meterState string
}

func newResumer(b *testing.B, s *starter) *resumer {
	r := &resumer{s: s, session: filepath.Join(s.dir, "resumed.jsonl"), primed: filepath.Join(s.dir, "primed.jsonl"),
		meterState: filepath.Join(s.warmCache, "meter-state"), primedState: filepath.Join(s.dir, "primed-meter-state")}
	events := writeSession(b, r.session, resumedNodes)
	r.turn(b) // the priming turn: the log and state a resumed turn starts from
	copyFile(b, r.session, r.primed)
	os.RemoveAll(r.primedState)
	if _, err := os.Stat(r.meterState); err == nil {
		copyDir(b, r.meterState, r.primedState)
	} else if !s.noPlugins {
		b.Fatalf("%s: the priming turn left no meter state: %v", s.bin, err)
	}
	b.Logf("%s: resumed session of %d nodes, %d events generated", s.bin, resumedNodes, events)
	return r
}

// reset puts back the primed session and meter state.
func (r *resumer) reset(b *testing.B) {
	copyFile(b, r.primed, r.session)
	if err := os.RemoveAll(r.meterState); err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(r.primedState); err == nil {
		copyDir(b, r.primedState, r.meterState)
	}
}

// turn runs one turn of the command on the session, to its exit, and
// returns the wall time, the wall time again and the CPU time.
func (r *resumer) turn(b *testing.B) [3]time.Duration {
	cmd := exec.Command(r.s.bin, "run", "--route", "offline", "--session", r.session, "hello")
	cmd.Dir = r.s.dir
	cmd.Env = r.s.env(r.s.warmCache)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: turn on the resumed session: %v\n%s", r.s.bin, err, out.Bytes())
	}
	wall := time.Since(start)
	if !bytes.Contains(out.Bytes(), []byte("turn ")) || !bytes.Contains(out.Bytes(), []byte("completed")) {
		b.Fatalf("%s: the turn did not complete:\n%s", r.s.bin, out.Bytes())
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return [3]time.Duration{wall, wall, cpu}
}

// writeSession writes a session log at path whose surface has nodes nodes
// (a system prompt, then turns of a user message, a tool call, its result
// and an answer, the last turn without the tool) and returns its number of
// events.
func writeSession(tb testing.TB, path string, nodes int) int {
	tb.Helper()
	const at = 1767268800000
	s, err := jsonl.Create(path, jsonl.Header{ID: "resumed", CreatedAt: at}, jsonl.NoSync())
	if err != nil {
		tb.Fatal(err)
	}
	l := surface.New(surface.WithClock(func() int64 { return at }))
	data := func(v any) []byte {
		b, err := surface.Data(v)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	model := surface.Source{Kind: "model", Provider: "offline", Model: "demo"}
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	for turn := int64(1); l.NodeCount() < nodes; turn++ {
		id := func(k string) string { return k + "-" + strconv.FormatInt(turn, 10) }
		step := func(n int64, m surface.Message) []byte {
			return data(surface.StepMessage{Turn: turn, Step: n, Message: m})
		}
		ref := func(n int64) []byte { return data(map[string]any{"turn": turn, "step": n}) }
		ps := []surface.Proposal{
			{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": turn})},
			{Type: surface.TypeStepStart, Data: ref(1)},
		}
		if turn == 1 {
			ps = append(ps, surface.Proposal{Type: surface.TypeSystemMessage, Op: surface.Append,
				Data: step(1, surface.SystemMessage("sys", "system-prompt", "You are a test."))})
		}
		ps = append(ps, surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: id("u"),
			Role: surface.RoleUser, Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("question " + id("q") + " " + filler)}})})
		if turn == 1 && nodes%2 == 0 { // a second one: every other turn adds an even number of nodes
			ps = append(ps, surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: id("v"),
				Role: surface.RoleUser, Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("and " + filler)}})})
		}
		if turn == 1 {
			ps = append(ps, surface.Proposal{Type: surface.TypeRequestHeader, Data: data(surface.HeaderEvent{
				Header: surface.Header{Config: surface.CallConfig{Provider: "offline", Model: "demo"}}, Reason: surface.ReasonInitial})})
		}
		n := int64(1)
		if turn == 1 || nodes-l.NodeCount() >= 4 { // room for a user message, a tool call, its result and an answer
			ps = append(ps,
				surface.Proposal{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: step(1, surface.Message{ID: id("a"),
					Role: surface.RoleAssistant, Source: model, Content: []surface.Block{surface.ToolCall(id("c"), "read_file", `{"path":"a.txt"}`)}})},
				surface.Proposal{Type: surface.TypeToolCall, Data: data(map[string]any{"turn": turn, "step": 1, "callId": id("c"), "name": "read_file", "arguments": `{"path":"a.txt"}`})},
				surface.Proposal{Type: surface.TypeToolResult, Op: surface.Append, Data: step(1, surface.Message{ID: id("r"), Role: surface.RoleUser,
					Source: surface.Source{Kind: "tool", CallID: id("c")}, Content: []surface.Block{surface.ToolResult(id("c"), false, surface.Text(filler))}})},
				surface.Proposal{Type: surface.TypeStepEnd, Data: ref(1)},
				surface.Proposal{Type: surface.TypeStepStart, Data: ref(2)},
			)
			n = 2
		}
		ps = append(ps,
			surface.Proposal{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: step(n, surface.Message{ID: id("b"),
				Role: surface.RoleAssistant, Source: model, Content: []surface.Block{surface.Text("answer " + filler)}})},
			surface.Proposal{Type: surface.TypeStepEnd, Data: ref(n)},
			surface.Proposal{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": turn, "reason": map[string]any{"kind": "completed"}})},
		)
		evs := make([]surface.Event, 0, len(ps))
		for _, p := range ps {
			e, err := l.Append(p)
			if err != nil {
				tb.Fatal(err)
			}
			evs = append(evs, e)
		}
		if err := s.Append(evs); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	if l.NodeCount() != nodes {
		tb.Fatalf("generated a session of %d nodes, want %d", l.NodeCount(), nodes)
	}
	return l.Len()
}

func copyFile(tb testing.TB, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func copyDir(tb testing.TB, from, to string) {
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		tb.Fatal(err)
	}
}

func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	m := d[len(d)/2]
	if len(d)%2 == 0 {
		m = (d[len(d)/2-1] + m) / 2
	}
	return float64(m.Microseconds()) / 1000
}

// starter starts one build of the command against its own loopback server,
// in its own folder and configuration.
type starter struct {
	bin, dir, url, warmCache string
	noPlugins                bool
	requests                 chan time.Time
	n                        int
}

func newStarter(b *testing.B, bin string, noPlugins bool, extraConf string) *starter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	s := &starter{bin: bin, dir: b.TempDir(), url: "http://" + ln.Addr().String() + "/v1", noPlugins: noPlugins, requests: make(chan time.Time, 1)}
	s.warmCache = filepath.Join(s.dir, "warm-cache")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var one [1]byte
				if _, err := io.ReadFull(c, one[:]); err == nil {
					s.requests <- time.Now()
				}
			}()
		}
	}()
	conf := "sessions:\n  dir: " + filepath.Join(s.dir, "sessions") + "\n" + extraConf
	if noPlugins {
		conf += "plugins:\n  - name: system-prompt\n    enabled: false\n  - name: compaction-basic\n    enabled: false\n  - name: token-meter\n    enabled: false\n"
	}
	if err := os.WriteFile(filepath.Join(s.dir, "weir.yaml"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	return s
}

// env is the command's environment with the compilation cache cache.
func (s *starter) env(cache string) []string {
	home := filepath.Join(s.dir, "home")
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"WEIR_WAZERO_CACHE=" + cache}
}

// fill runs the command to its end on the offline route with the warm
// cache. (A run killed at its request, as run does, may end before a
// compilation that runs in the background reaches the cache.)
func (s *starter) fill(b *testing.B) {
	s.n++
	cmd := exec.Command(s.bin, "run", "--route", "offline",
		"--session", filepath.Join(s.dir, "s-"+strconv.Itoa(s.n)+".jsonl"), "hello")
	cmd.Dir = s.dir
	cmd.Env = s.env(s.warmCache)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: filling the compilation cache: %v\n%s", s.bin, err, out)
	}
}

// run starts the command on a new session with the compilation cache
// cache and returns the time to the request, the time to the first output
// and the CPU time.
func (s *starter) run(b *testing.B, cache string) [3]time.Duration {
	s.n++
	cmd := exec.Command(s.bin, "run", "--base-url", s.url, "--provider", "test", "--model", "test-model",
		"--session", filepath.Join(s.dir, "s-"+strconv.Itoa(s.n)+".jsonl"), "hello")
	cmd.Dir = s.dir
	cmd.Env = s.env(cache)
	// The command writes standard error into a pipe of its own, read to
	// its end after the kill, so no early byte is lost.
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()
	cmd.Stderr = pw
	var firstOutput time.Duration
	read := make(chan struct{})
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	pw.Close()
	go func() {
		defer close(read)
		r := bufio.NewReader(pr)
		if _, err := r.ReadByte(); err == nil {
			firstOutput = time.Since(start)
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var firstByte time.Duration
	select {
	case t := <-s.requests:
		firstByte = t.Sub(start)
	case err := <-exited:
		b.Fatalf("%s exited before its request: %v", s.bin, err)
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		b.Fatalf("%s: no request within 5 minutes", s.bin)
	}
	_ = cmd.Process.Kill()
	<-exited
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	<-read
	if firstOutput == 0 || firstOutput > firstByte {
		firstOutput = firstByte
	}
	return [3]time.Duration{firstByte, firstOutput, cpu}
}
