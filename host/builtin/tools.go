// Package builtin holds the tools Weir's command line offers the model:
// read-only file access confined to one directory, and the clock.
//
// # Confinement
//
// read_file and list_files resolve every path through an [os.Root] opened
// on the working directory, so no path leaves it: absolute paths and paths
// with ".." that climb above the root are refused before anything is
// opened, and a symbolic link is followed only when it is relative and
// resolves inside the root (a link anywhere on the path, to a file or to a
// directory). A link whose target is absolute is refused even when that
// target happens to lie inside the working directory, because os.Root
// cannot tell; make such links relative.
//
// # Non-regular files
//
// read_file reads regular files only and list_files directories only.
// Named pipes, devices and sockets are refused by their type, checked on
// the opened descriptor (so a rename between the check and the open does
// not matter); the open itself uses O_NONBLOCK on Unix, so a named pipe
// with no writer cannot block it. A read returns at most [MaxRead] bytes
// and never reads more than one byte past that.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// MaxEntries bounds how many entries list_files returns; a larger folder is
// listed by the first MaxEntries names in order and a line saying how many
// more there are. The folder is still read whole, a batch at a time.
const MaxEntries = 1000

// Tools returns the built-in tools confined to root. now is the clock
// (time.Now when nil).
func Tools(root string, now func() time.Time) []host.Tool {
	if now == nil {
		now = time.Now
	}
	return []host.Tool{
		readOnly{&host.FuncTool{ToolName: "list_files", Description: "List the entries of a directory under the working directory.",
			Parameters: jsontext.Value(`{"type":"object","properties":{"path":{"type":"string","description":"directory, relative to the working directory; default ."}}}`),
			Fn:         func(ctx context.Context, args string) (string, error) { return listFiles(ctx, root, args) }}},
		readOnly{&host.FuncTool{ToolName: "read_file", Description: "Read a text file under the working directory (at most 64 KiB).",
			Parameters: jsontext.Value(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Fn:         func(ctx context.Context, args string) (string, error) { return readFile(ctx, root, args) }}},
		readOnly{&host.FuncTool{ToolName: "current_time", Description: "The current date and time (UTC).",
			Fn: func(context.Context, string) (string, error) { return now().UTC().Format(time.RFC3339), nil }}},
	}
}

// readOnly marks a tool that only reads: the permission policy allows it
// by default (host/policy).
type readOnly struct{ host.Tool }

func (readOnly) IsReadOnly() bool { return true }

type pathArgs struct {
	Path string `json:"path"`
}

// confinement names the rule every refusal cites.
const confinement = "the file tools are confined to the working directory"

// pathOf decodes the arguments and refuses a path that leaves the root by
// its spelling alone: absolute, or climbing above it with "..".
func pathOf(args string) (string, error) {
	var a pathArgs
	if strings.TrimSpace(args) != "" {
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return "", fmt.Errorf("arguments are not a JSON object with a path: %v", err)
		}
	}
	if a.Path == "" {
		a.Path = "."
	}
	switch {
	case filepath.IsAbs(a.Path) || strings.HasPrefix(a.Path, "/") || filepath.VolumeName(a.Path) != "":
		return "", fmt.Errorf("path %q is absolute; it must be relative to the working directory (%s)", a.Path, confinement)
	case !filepath.IsLocal(a.Path):
		return "", fmt.Errorf("path %q leaves the working directory (%s)", a.Path, confinement)
	}
	return a.Path, nil
}

// open opens name inside root without following any link out of it and
// without blocking on a named pipe, and returns it with its type checked
// on the descriptor: a directory when dir, else a regular file.
func open(root, name, tool string, dir bool) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("the working directory cannot be opened: %v", err)
	}
	defer r.Close()
	// Check the type first so that a device is not even opened (opening
	// one can have effects), then again on the descriptor, which is what
	// counts should the entry change in between.
	if fi, err := r.Stat(name); err != nil {
		return nil, pathError(name, err)
	} else if err := checkType(name, tool, fi.Mode(), dir); err != nil {
		return nil, err
	}
	f, err := r.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, pathError(name, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkType(name, tool, fi.Mode(), dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkType(name, tool string, m fs.FileMode, dir bool) error {
	switch {
	case dir && !m.IsDir():
		return fmt.Errorf("%q is not a directory (%s); %s lists directories only", name, kindOf(m), tool)
	case !dir && !m.IsRegular():
		return fmt.Errorf("%q is not a regular file (%s); %s reads regular files only", name, kindOf(m), tool)
	}
	return nil
}

// kindOf names a file type for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file or directory"
}

// pathError rewrites an os.Root error into one that says why.
func pathError(name string, err error) error {
	switch {
	case escapes(err):
		return fmt.Errorf("path %q leads outside the working directory through a symbolic link (%s: links are followed only when relative and staying inside it)", name, confinement)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("path %q: no such file or directory", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("path %q: permission denied", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("path %q: %v", name, pe.Err)
	}
	return fmt.Errorf("path %q: %v", name, err)
}

// escapes reports an os.Root refusal of a path that resolves outside the
// root. The os package does not export that error, only its text.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func listFiles(ctx context.Context, root, args string) (string, error) {
	p, err := pathOf(args)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f, err := open(root, p, "list_files", true)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var names []string
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			names = append(names, n)
		}
		if err == io.EOF || (err == nil && len(entries) == 0) {
			break
		}
		if err != nil {
			return "", pathError(p, err)
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	sort.Strings(names)
	if n := len(names) - MaxEntries; n > 0 {
		names = append(names[:MaxEntries], fmt.Sprintf("[%d more entries not listed]", n))
	}
	return strings.Join(names, "\n"), nil
}

func readFile(ctx context.Context, root, args string) (string, error) {
	p, err := pathOf(args)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f, err := open(root, p, "read_file", false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// Read at most one byte past the limit, in pieces, so that a
	// cancelled call stops between them.
	b := make([]byte, 0, 16<<10)
	r := io.LimitReader(f, MaxRead+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", pathError(p, err)
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	if len(b) > MaxRead {
		return string(b[:MaxRead]) + "\n[truncated at 64 KiB]", nil
	}
	return string(b), nil
}
