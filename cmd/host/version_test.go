package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionLine: the line names the module version and, for a build
// from a checkout, the VCS revision, whether it was dirty and its time.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	goes := " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	cases := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "weir (unknown)" + goes},
		{"installed at a version", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "weir v1.4.0" + goes},
		{"a checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"weir (devel) revision 0123abcd, 2026-12-01T10:00:00Z" + goes},
		{"a dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}},
			"weir (devel) revision 0123abcd, dirty" + goes},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, versionLine(c.info)) })
	}
}

// TestVersionOfTheBuiltCommand: "version" and "--version" print the
// running binary's own line and exit 0. The commands the tests run are
// the test binary, which go test stamps with no VCS revision, so the line
// is checked against that binary's build information; with WEIR_LONG=1
// (.ci/run) a go build of cmd/weir also shows the checkout's revision
// stamped in.
func TestVersionOfTheBuiltCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	info, ok := debug.ReadBuildInfo()
	require.True(t, ok, "the test binary has build information")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runHost(t, dir, "", args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, versionLine(info)+"\n", r.stdout)
	}
	r := runHost(t, dir, "", "version", "extra")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `weir version: unexpected argument "extra"`)

	if os.Getenv("WEIR_LONG") != "1" {
		return
	}
	bin := filepath.Join(dir, "weir")
	out, err := exec.Command("go", "build", "-o", bin, "../weir").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(bin, "version")
	cmd.Dir = dir
	cmd.Env = hostEnv()
	got, err := cmd.Output()
	require.NoError(t, err)
	require.Regexp(t, `^weir \S+( revision [0-9a-f]{40}(, dirty)?(, \S+)?)? \(go\S+ \S+/\S+\)\n$`, string(got))
}

// TestMessagesUseTheInvokedName: a binary installed under another name
// speaks of itself by that name in errors and help.
func TestMessagesUseTheInvokedName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	renamed := filepath.Join(dir, "agent")
	require.NoError(t, os.Symlink(hostBin, renamed))
	cmd := exec.Command(renamed, "replay")
	cmd.Dir = dir
	cmd.Env = hostEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode())
	require.Contains(t, string(out), "agent replay: usage: agent replay [--json] FILE\nrun \"agent replay -h\" for its usage\n")
	help := exec.Command(renamed, "help")
	help.Env = hostEnv()
	helpOut, err := help.Output()
	require.NoError(t, err)
	require.Contains(t, string(helpOut), "Usage: agent <command> [flags] [args]")
}

// TestRunFromDevNullIsNotInteractive: /dev/null is a character device but
// no terminal, so "run" reads the prompt from it, finds none, and says so
// with status 2 instead of starting the interactive prompt.
func TestRunFromDevNullIsNotInteractive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	cmd := exec.Command(hostBin, "run", "--route", "offline")
	cmd.Dir = dir
	cmd.Env = hostEnv()
	cmd.Stdin = null
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	require.Equal(t, 2, ee.ExitCode())
	require.Contains(t, string(out), "give a prompt as arguments or on standard input")
	require.NotContains(t, string(out), "> ")
}

// TestDemoWorkspaceAsDocumented: docs/cli.md names the folders of the
// demo's scratch examples folder.
func TestDemoWorkspaceAsDocumented(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "cli.md"))
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "`examples` folder (`")
	require.GreaterOrEqual(t, i, 0, "docs/cli.md lists the demo's folders")
	listed := doc[i+len("`examples` folder (`"):]
	listed = listed[:strings.Index(listed, "`")]
	seen := map[string]bool{}
	var folders []string
	for p := range demoWorkspace {
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "examples/"), "/")
		if !seen[top] {
			seen[top] = true
			folders = append(folders, top+"/")
		}
	}
	sort.Strings(folders)
	require.Equal(t, strings.Join(folders, " "), listed)
}

// TestReplayJSONDocExample: the events and nodes docs/cli.md shows for
// "replay --json" are those of the shipped sample.
func TestReplayJSONDocExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "cli.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`"events": (\d+), "nodes": \[([\d, ]+)\]`).FindStringSubmatch(string(raw))
	require.NotNil(t, m, "docs/cli.md shows replay --json")
	r := runHost(t, t.TempDir(), "", "replay", "--json", filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	var got struct {
		Events int     `json:"events"`
		Nodes  []int64 `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, m[1], strconv.Itoa(got.Events))
	var nodes []string
	for _, n := range got.Nodes {
		nodes = append(nodes, strconv.FormatInt(n, 10))
	}
	require.Equal(t, m[2], strings.Join(nodes, ", "))
}
