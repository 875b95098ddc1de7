// Package builtin holds the tools Weir's command line offers the model:
// read-only file access confined to one directory, and the clock.
package builtin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host"
)

// MaxRead bounds what read_file returns.
const MaxRead = 64 << 10

// Tools returns the built-in tools confined to root. now is the clock
// (time.Now when nil).
func Tools(root string, now func() time.Time) []host.Tool {
	if now == nil {
		now = time.Now
	}
	return []host.Tool{
		&host.FuncTool{ToolName: "list_files", Description: "List the entries of a directory under the working directory.",
			Parameters: jsontext.Value(`{"type":"object","properties":{"path":{"type":"string","description":"directory, relative to the working directory; default ."}}}`),
			Fn:         func(_ context.Context, args string) (string, error) { return listFiles(root, args) }},
		&host.FuncTool{ToolName: "read_file", Description: "Read a text file under the working directory (at most 64 KiB).",
			Parameters: jsontext.Value(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Fn:         func(_ context.Context, args string) (string, error) { return readFile(root, args) }},
		&host.FuncTool{ToolName: "current_time", Description: "The current date and time (UTC).",
			Fn: func(context.Context, string) (string, error) { return now().UTC().Format(time.RFC3339), nil }},
	}
}

type pathArgs struct {
	Path string `json:"path"`
}

// resolve maps a relative path to one inside root, refusing escapes.
func resolve(root, args string) (string, error) {
	var a pathArgs
	if strings.TrimSpace(args) != "" {
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return "", fmt.Errorf("arguments are not a JSON object with a path: %v", err)
		}
	}
	if a.Path == "" {
		a.Path = "."
	}
	if filepath.IsAbs(a.Path) {
		return "", fmt.Errorf("path %q must be relative to the working directory", a.Path)
	}
	p := filepath.Join(root, a.Path)
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leaves the working directory", a.Path)
	}
	return p, nil
}

func listFiles(root, args string) (string, error) {
	p, err := resolve(root, args)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "\n"), nil
}

func readFile(root, args string) (string, error) {
	p, err := resolve(root, args)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxRead+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxRead {
		return string(b[:MaxRead]) + "\n[truncated at 64 KiB]", nil
	}
	return string(b), nil
}
