package cli

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStartup runs the built command, "host run" on a new session
// against a loopback server, and measures the time from starting the
// process to the first byte of its model request, with the plugins of the
// default configuration. The process is killed at that byte.
//
//   - warm: the compilation cache already holds the plugins.
//   - cold: an empty compilation cache each time (a first run).
//   - no-plugins: every plugin disabled, the floor of the rest of startup.
//
// It reports medians: ms-to-request, the time to that byte; ms-to-output,
// the time to the first byte on standard error (the compile notice of a
// first run; the request time when nothing was written); and cpu-ms, the
// process's CPU time until it was killed, which a busy machine disturbs
// less than the wall time.
//
// WEIR_STARTUP_BASELINE names other builds of the command (a list, like
// PATH). Each iteration then starts every build once, in rotating order,
// so that all see the same machine load, and the metrics of a baseline
// carry its file name as a prefix (host-old:ms-to-request); ns/op covers
// all of them:
//
//	git stash; go build -o host-old ./cmd/weir; git stash pop
//	WEIR_STARTUP_BASELINE=$PWD/host-old go test ./cmd/host -run '^$' -bench Startup -benchtime 10x
func BenchmarkStartup(b *testing.B) {
	type build struct{ prefix, path string }
	builds := []build{{"", hostBin}}
	for _, old := range filepath.SplitList(os.Getenv("WEIR_STARTUP_BASELINE")) {
		builds = append(builds, build{filepath.Base(old) + ":", old})
	}
	modes := []struct {
		name            string
		cold, noPlugins bool
	}{{"warm", false, false}, {"cold", true, false}, {"no-plugins", false, true}}
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			starters := make([]*starter, len(builds))
			for i, bld := range builds {
				starters[i] = newStarter(b, bld.path, mode.noPlugins)
				if !mode.cold {
					starters[i].fill(b) // fills the cache; the page cache holds the binary
				}
			}
			samples := make([][3][]time.Duration, len(builds))
			for i := 0; b.Loop(); i++ {
				for k := range builds {
					j := (i + k) % len(builds)
					s := starters[j]
					cache := s.warmCache
					if mode.cold {
						cache = filepath.Join(s.dir, "cold-cache-"+strconv.Itoa(i))
					}
					r := s.run(b, cache)
					for m := range r {
						samples[j][m] = append(samples[j][m], r[m])
					}
				}
			}
			for j, bld := range builds {
				for m, unit := range []string{"ms-to-request", "ms-to-output", "cpu-ms"} {
					b.ReportMetric(median(samples[j][m]), bld.prefix+unit)
				}
			}
		})
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
	requests                 chan time.Time
	n                        int
}

func newStarter(b *testing.B, bin string, noPlugins bool) *starter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	s := &starter{bin: bin, dir: b.TempDir(), url: "http://" + ln.Addr().String() + "/v1", requests: make(chan time.Time, 1)}
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
	conf := "sessions:\n  dir: " + filepath.Join(s.dir, "sessions") + "\n"
	if noPlugins {
		conf += "plugins:\n  - name: system-prompt\n    enabled: false\n  - name: compaction-basic\n    enabled: false\n  - name: token-meter\n    enabled: false\n"
	}
	if err := os.WriteFile(filepath.Join(s.dir, "weir.yaml"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	return s
}

// fill runs the command to its end on the offline route with the warm
// cache. (A run killed at its request, as run does, may end before a
// compilation that runs in the background reaches the cache.)
func (s *starter) fill(b *testing.B) {
	s.n++
	home := filepath.Join(s.dir, "home")
	cmd := exec.Command(s.bin, "run", "--route", "offline",
		"--session", filepath.Join(s.dir, "s-"+strconv.Itoa(s.n)+".jsonl"), "hello")
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"WEIR_WAZERO_CACHE=" + s.warmCache}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: filling the compilation cache: %v\n%s", s.bin, err, out)
	}
}

// run starts the command on a new session with the compilation cache
// cache and returns the time to the request, the time to the first output
// and the CPU time.
func (s *starter) run(b *testing.B, cache string) [3]time.Duration {
	s.n++
	home := filepath.Join(s.dir, "home")
	cmd := exec.Command(s.bin, "run", "--base-url", s.url, "--provider", "test", "--model", "test-model",
		"--session", filepath.Join(s.dir, "s-"+strconv.Itoa(s.n)+".jsonl"), "hello")
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"WEIR_WAZERO_CACHE=" + cache}
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
