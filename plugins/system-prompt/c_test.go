package systemprompt

// The C port (./c) against this package: the same tables run against both
// modules (modules), and random configurations and requests must give the
// same bytes and the same errors from both (TestCMatchesGo).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/sdk/wasmbuild"
)

// cPort is the folder of the C port, and cSDK the C SDK it is built with.
const (
	cPort = "c"
	cSDK  = "../../sdk/c/weir"
)

// The C SDK's documented build (sdk/c/README.md): each source compiled
// with cCompile, the objects linked with cLink, never with -O, so that
// clang does not run binaryen's wasm-opt.
var (
	cCompile = []string{"--target=wasm32-wasi", "-mbulk-memory", "-O2", "-Wall", "-Wextra", "-Werror"}
	cLink    = []string{"--target=wasm32-wasi", "-mexec-model=reactor", "-Wl,--strip-all"}
)

// missing fails the test in CI (CI=true) and skips it elsewhere, as the
// C SDK's tests do: a tool the C build needs is not installed.
func missing(tb testing.TB, what, install string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s is missing and CI=true: %s (.ci/run installs it)", what, install)
	}
	tb.Skipf("skipped: %s is missing; %s to run this test", what, install)
}

var (
	cOnce sync.Once
	cWasm []byte
	cErr  error
)

// buildC builds the C port with clang, once per test binary, into the
// content-hash cache Go guests are built into ($WEIR_WASMBUILD_CACHE): the
// key is clang's version, the flags and the sources, so an unchanged
// port costs one read.
func buildC(tb testing.TB) []byte {
	tb.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		missing(tb, "clang", "apt-get install clang lld wasi-libc libclang-rt-dev-wasm32")
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		missing(tb, "wasm-ld (lld)", "apt-get install lld")
	}
	cOnce.Do(func() { cWasm, cErr = compileC() })
	if cErr != nil {
		tb.Fatalf("build the C port: %v", cErr)
	}
	return cWasm
}

// cSources are the port's sources and the SDK's, compiled one by one.
var cSources = []string{filepath.Join(cPort, "prompt.c"), filepath.Join(cSDK, "weir.c")}

func compileC() ([]byte, error) {
	version, err := exec.Command("clang", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("clang --version: %w", err)
	}
	h := sha256.New()
	line, _, _ := strings.Cut(string(version), "\n")
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", line, strings.Join(cCompile, " "), strings.Join(cLink, " "))
	for _, f := range append(cSources, filepath.Join(cSDK, "weir.h")) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(f), len(b))
		h.Write(b)
	}
	dir := wasmbuild.DefaultCacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "c-system-prompt-"+hex.EncodeToString(h.Sum(nil)[:16])+".wasm")
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out.wasm")
	if err := clangBuild(tmp, out, nil); err != nil {
		return nil, err
	}
	if err := os.Rename(out, path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// clangBuild runs the documented build of the port into out, with its
// objects in tmp; env is the commands' environment (nil: the test's).
func clangBuild(tmp, out string, env []string) error {
	var objs []string
	for i, src := range cSources {
		obj := filepath.Join(tmp, strconv.Itoa(i)+".o")
		cmd := exec.Command("clang", append(append([]string{}, cCompile...), "-I", cSDK, "-c", "-o", obj, src)...)
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("clang %s: %v\n%s", src, err, b)
		}
		objs = append(objs, obj)
	}
	cmd := exec.Command("clang", append(append(append([]string{}, cLink...), "-o", out), objs...)...)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("clang link: %v\n%s", err, b)
	}
	return nil
}

// The build never runs binaryen's wasm-opt (no -O on the link): with a
// wasm-opt that always fails first on PATH it builds the same module.
func TestCBuildIgnoresWasmOpt(t *testing.T) {
	want := buildC(t)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "wasm-opt"),
		[]byte("#!/bin/sh\necho 'wasm-opt must not run' >&2\nexit 1\n"), 0o755))
	tmp := t.TempDir()
	out := filepath.Join(tmp, "out.wasm")
	require.NoError(t, clangBuild(tmp, out, append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the build with a failing wasm-opt on PATH differs")
}

// module is one build of the plugin.
type module struct {
	name string
	wasm []byte
}

// modules are the Go standalone module and the C port: the tables of
// plugin_test.go run against both.
func modules(tb testing.TB) []module {
	tb.Helper()
	return []module{{"go", plugintest.Build(tb, standalone)}, {"c", buildC(tb)}}
}

// The C port describes itself as the Go plugin does, but for its SDK.
func TestCDescribe(t *testing.T) {
	for _, m := range modules(t) {
		p := plugintest.LoadBytes(t, Name, m.wasm)
		d := p.Description()
		require.Equal(t, "system-prompt", d.Name, m.name)
		require.Equal(t, "1.0.0", d.Version, m.name)
		require.Equal(t, []abi.Kind{abi.KindSystemPrompt}, d.Kinds, m.name)
		require.True(t, d.RenderOnChange, m.name)
		require.True(t, strings.HasPrefix(d.Sdk, map[string]string{"go": "weir-go-sdk/", "c": "weir-c/"}[m.name]), "%s: sdk %q", m.name, d.Sdk)
	}
}

// Syntax errors: the C port's messages are its own, but both fail, and
// the two jsontext messages the tables name (TestConfigErrorsFailTheLoad)
// are the C port's too.
func TestCSyntaxErrorsFailTheLoad(t *testing.T) {
	cases := []string{
		`{`, `{"data": [`, `{"data": ["a"`, `{"data": ["a",]}`, `{"data": [],}`, `{"data" []}`,
		`{"data": ["a" "b"]}`, `{"data": [01]}`, `{"data": [1.]}`, `{"data": [-]}`, `{"data": [1e]}`,
		`{"data": [tru]}`, `{"data": [nul]}`, "{\"data\": [\"\xff\"]}", `{"data": ["\ud800"]}`,
		`{"data": ["\udc00"]}`, `{"data": ["\q"]}`, "{\"data\": [\"a\x01\"]}", `{1: 2}`, `{"data": [null] ]`,
		`{'data': []}`, `{"data": []} x`, "\u00a0{}", `// {}`, `{"perModel": {"m": [{"key": "k", "key": "j"}]}}`,
		`{"perModel": {"a": null, "a": null}}`, `{"data": [], "data": []}`,
	}
	for _, m := range modules(t) {
		for _, cfg := range cases {
			_, err := plugintest.Runtime(t).Load(context.Background(), Name, m.wasm, plugin.WithConfig([]byte(cfg)))
			require.ErrorContains(t, err, "configure: system-prompt config: ", "%s: %q", m.name, cfg)
		}
	}
}

// gen makes random configurations and requests from small alphabets, so
// that routes, keys and host data meet.
type gen struct{ r *rand.Rand }

var (
	genKeys   = []string{"identity", "tools", "style", "extra", "", "ké", "a\"b", "tab\there", "日本"}
	genTexts  = []string{"", " ", "Be brief.", "  padded\n", "\u00a0nbsp\u3000", "line 1\n\nline 2", "\r\n", "héllo ✓", "\u2028x\u2029", "\u0085y", "tail"}
	genRoutes = []string{"p/m", "m", "p/n", "n", "", "q/m", "/m"}
	genData   = []string{"date", "workdir", "cwd", "", "blank", "x\ny"}
)

func (g gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// jsonString quotes s as JSON, sometimes with \u escapes.
func (g gen) jsonString(s string) string {
	if g.r.IntN(4) == 0 {
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range s {
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	q, _ := marshalString(s)
	return q
}

func marshalString(s string) (string, error) {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// value is a random JSON value of the wrong kind, or null.
func (g gen) value() string {
	return []string{"null", "1", "-2.5e3", "true", "false", `"s"`, "{}", "[]", `{"a": [1]}`}[g.r.IntN(9)]
}

// members joins object members, in a random order with random blanks.
func (g gen) object(members []string) string {
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	ws := []string{"", " ", "\n\t", "\r\n  "}
	return "{" + g.pick(ws) + strings.Join(members, ","+g.pick(ws)) + g.pick(ws) + "}"
}

func (g gen) section() string {
	if g.r.IntN(20) == 0 {
		return g.value()
	}
	var m []string
	if g.r.IntN(8) != 0 {
		k := `"key": ` + g.jsonString(g.pick(genKeys))
		if g.r.IntN(15) == 0 {
			k = `"key": ` + g.value()
		}
		m = append(m, k)
	}
	if g.r.IntN(5) != 0 {
		m = append(m, `"text": `+g.jsonString(g.pick(genTexts)))
	}
	if g.r.IntN(40) == 0 {
		m = append(m, g.jsonString(g.pick([]string{"Key", "txt", "x"}))+": 1")
	}
	return g.object(m)
}

func (g gen) array(n int, elem func() string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = elem()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (g gen) config() string {
	if g.r.IntN(30) == 0 {
		return g.pick([]string{"", " \n", "null", `["data"]`, "5", `"x"`, "{} {}", "\u00a0"})
	}
	var m []string
	if g.r.IntN(4) != 0 {
		routes := map[string]bool{}
		var rm []string
		for range g.r.IntN(4) {
			rt := g.pick(genRoutes)
			if routes[rt] {
				continue
			}
			routes[rt] = true
			v := g.array(g.r.IntN(4), g.section)
			if g.r.IntN(15) == 0 {
				v = g.value()
			}
			rm = append(rm, g.jsonString(rt)+": "+v)
		}
		pm := g.object(rm)
		if g.r.IntN(20) == 0 {
			pm = g.value()
		}
		m = append(m, `"perModel": `+pm)
	}
	if g.r.IntN(3) != 0 {
		d := g.array(g.r.IntN(4), func() string {
			if g.r.IntN(20) == 0 {
				return g.value()
			}
			return g.jsonString(g.pick(genData))
		})
		if g.r.IntN(20) == 0 {
			d = g.value()
		}
		m = append(m, `"data": `+d)
	}
	if g.r.IntN(30) == 0 {
		m = append(m, g.jsonString(g.pick([]string{"PerModel", "date", "perModel "}))+": null")
	}
	return g.object(m)
}

func (g gen) request() *abi.RenderRequest {
	req := &abi.RenderRequest{}
	for range g.r.IntN(5) {
		req.Sections = append(req.Sections, abi.Section{Key: g.pick(genKeys), Text: g.pick(genTexts)})
	}
	rt, _, _ := strings.Cut(g.pick(genRoutes), "")
	if p, m, ok := strings.Cut(rt, "/"); ok {
		req.Route = abi.Route{Provider: p, Model: m}
	} else {
		req.Route = abi.Route{Provider: g.pick([]string{"p", "q", ""}), Model: rt}
	}
	for range g.r.IntN(5) {
		req.HostData = append(req.HostData, abi.KeyValue{Key: g.pick(genData), Value: g.pick(genTexts)})
	}
	return req
}

// Random configurations and requests: the Go module and the C port load
// or fail alike (the same message) and render the same bytes.
func TestCMatchesGo(t *testing.T) {
	mods := modules(t)
	seed := uint64(1)
	if s := os.Getenv("WEIR_PROMPT_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	g := gen{rand.New(rand.NewPCG(seed, 0x5eed))}
	ctx := context.Background()
	loaded, failed := 0, 0
	for i := range 200 {
		cfg := g.config()
		var ps [2]*plugin.Plugin
		var errs [2]string
		for j, m := range mods {
			p, err := plugintest.Runtime(t).Load(ctx, Name, m.wasm, plugin.WithConfig([]byte(cfg)))
			if err != nil {
				errs[j] = err.Error()
				continue
			}
			ps[j] = p
		}
		require.Equal(t, errs[0], errs[1], "config %d %q", i, cfg)
		if ps[0] == nil {
			failed++
			continue
		}
		loaded++
		for range 8 {
			req := g.request()
			want, err := ps[0].RenderPrompt(ctx, nil, req)
			require.NoError(t, err)
			got, err := ps[1].RenderPrompt(ctx, nil, req)
			require.NoError(t, err)
			require.Equal(t, want, got, "config %q, request %+v", cfg, req)
		}
		for _, p := range ps {
			require.NoError(t, p.Close(ctx))
		}
	}
	t.Logf("seed %d: %d configurations loaded, %d failed alike", seed, loaded, failed)
	if t.Failed() {
		return
	}
	// Mutated documents: a byte dropped, doubled or replaced. Both modules
	// accept the same documents and render them alike; a document the Go
	// plugin's decoder rejects fails the C port too (its words differ),
	// and every other failure reads the same.
	syntax := 0
	for i := range 200 {
		cfg := []byte(g.config())
		if len(cfg) == 0 {
			continue
		}
		at := g.r.IntN(len(cfg))
		switch g.r.IntN(3) {
		case 0:
			cfg = append(cfg[:at:at], cfg[at+1:]...)
		case 1:
			cfg = append(cfg[:at+1:at+1], cfg[at:]...)
		default:
			const bytes = "{}[],:\"\\ 0-.etu\x00\xc3\xff"
			cfg[at] = bytes[g.r.IntN(len(bytes))]
		}
		var ps [2]*plugin.Plugin
		var errs [2]string
		for j, m := range mods {
			p, err := plugintest.Runtime(t).Load(ctx, Name, m.wasm, plugin.WithConfig(cfg))
			if err != nil {
				errs[j] = err.Error()
			} else {
				ps[j] = p
			}
		}
		switch {
		case strings.Contains(errs[0], "jsontext: "):
			syntax++
			require.NotEmpty(t, errs[1], "mutation %d %q: the Go plugin fails (%s), the C port loads", i, cfg, errs[0])
		default:
			require.Equal(t, errs[0], errs[1], "mutation %d %q", i, cfg)
		}
		if ps[0] != nil && ps[1] != nil {
			req := g.request()
			want, err := ps[0].RenderPrompt(ctx, nil, req)
			require.NoError(t, err)
			got, err := ps[1].RenderPrompt(ctx, nil, req)
			require.NoError(t, err)
			require.Equal(t, want, got, "mutation %q, request %+v", cfg, req)
		}
		for _, p := range ps {
			if p != nil {
				require.NoError(t, p.Close(ctx))
			}
		}
	}
	t.Logf("seed %d: %d mutated documents failed as JSON in both", seed, syntax)
	require.Greater(t, syntax, 50, "the mutations make too few syntax errors")
	require.Greater(t, loaded, 50, "the generator makes too few valid configurations")
	require.Greater(t, failed, 50, "the generator makes too few invalid configurations")
}
