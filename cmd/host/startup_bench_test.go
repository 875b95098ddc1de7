package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
// It reports ms-to-request, the time to that byte; ms-to-output, the time
// to the first byte on standard error (the compile notice of a first run;
// the request time when nothing was written); and cpu-ms, the process's
// CPU time until it was killed, which a busy machine disturbs less than
// the wall time.
//
// WEIR_STARTUP_BASELINE names other builds of the command (a list, like
// PATH) measured the same way under baseline=NAME/, to compare builds in
// one run:
//
//	git stash; go build -o /tmp/host-old ./cmd/host; git stash pop
//	WEIR_STARTUP_BASELINE=/tmp/host-old go test ./cmd/host -run '^$' -bench Startup -benchtime 10x
func BenchmarkStartup(b *testing.B) {
	bins := []struct{ name, path string }{{"current", hostBin}}
	for _, old := range filepath.SplitList(os.Getenv("WEIR_STARTUP_BASELINE")) {
		bins = append(bins, struct{ name, path string }{"baseline=" + filepath.Base(old), old})
	}
	for _, bin := range bins {
		b.Run(bin.name, func(b *testing.B) {
			warmCache := b.TempDir()
			b.Run("warm", func(b *testing.B) {
				startup(b, bin.path, func(int) string { return warmCache }, false, false)
			})
			b.Run("cold", func(b *testing.B) {
				dir := b.TempDir()
				startup(b, bin.path, func(i int) string { return filepath.Join(dir, "cache", strconv.Itoa(i)) }, true, false)
			})
			b.Run("no-plugins", func(b *testing.B) {
				startup(b, bin.path, func(int) string { return warmCache }, false, true)
			})
		})
	}
}

// startup measures b.N starts of bin; cache gives the compilation cache of
// the i-th start. Unless cold, one start before the timer fills the cache.
func startup(b *testing.B, bin string, cache func(i int) string, cold, noPlugins bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	requests := make(chan time.Time, 1)
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
					requests <- time.Now()
				}
			}()
		}
	}()
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	conf := "sessions:\n  dir: " + filepath.Join(dir, "sessions") + "\n"
	if noPlugins {
		conf += "plugins:\n  - name: system-prompt\n    enabled: false\n  - name: compaction-basic\n    enabled: false\n  - name: token-meter\n    enabled: false\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	run := func(i int) (firstByte, firstOutput, cpu time.Duration) {
		cmd := exec.Command(bin, "run", "--base-url", url, "--provider", "test", "--model", "test-model",
			"--session", filepath.Join(dir, "s-"+strconv.Itoa(i)+".jsonl"), "hello")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"WEIR_WAZERO_CACHE=" + cache(i)}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		outputs := make(chan time.Time, 1)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() {
			r := bufio.NewReader(stderr)
			if _, err := r.ReadByte(); err == nil {
				outputs <- time.Now()
			}
			_, _ = io.Copy(io.Discard, r)
		}()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case t := <-requests:
			firstByte = t.Sub(start)
		case err := <-exited:
			b.Fatalf("host exited before its request: %v", err)
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			b.Fatal("no request within a minute")
		}
		_ = cmd.Process.Kill()
		<-exited
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		select {
		case t := <-outputs:
			firstOutput = t.Sub(start)
		default:
			firstOutput = firstByte
		}
		return firstByte, firstOutput, cpu
	}
	if !cold {
		run(-1) // fills the cache; the page cache holds the binary
	}
	var total, output, cpu time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		fb, fo, c := run(i)
		total += fb
		output += fo
		cpu += c
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(total), "ms-to-request")
	b.ReportMetric(ms(output), "ms-to-output")
	b.ReportMetric(ms(cpu), "cpu-ms")
}
