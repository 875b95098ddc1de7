package v2

import (
	"bufio"
	"bytes"
	"errors"
	"github.com/weirhost/weir/surface/internal/atomicfile"
	"github.com/weirhost/weir/surface/internal/regular"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weirhost/weir/surface"
)

// Write writes res as a v3 JSONL log: the header line, then one line per
// event in the canonical v3 encoding (surface.AppendEvent).
func Write(w io.Writer, res *Result) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := append(res.Header.AppendJSON(nil), '\n')
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	for i := range res.Events {
		buf = append(surface.AppendEvent(buf[:0], &res.Events[i]), '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// FileOption configures ConvertFile.
type FileOption func(*fileOptions)

type fileOptions struct{ overwrite bool }

// Overwrite lets ConvertFile replace an existing output file (never the
// input itself).
func Overwrite() FileOption { return func(o *fileOptions) { o.overwrite = true } }

// ConvertFile converts the v2 log at in and writes the v3 log to out
// atomically: a temporary file in out's directory is written, synced and
// published under out, then the directory is synced. An existing out is
// refused unless Overwrite is given; out may never be the input. The input
// is only read. On any error nothing is left at out.
func ConvertFile(in, out string, opts ...FileOption) error {
	var o fileOptions
	for _, fn := range opts {
		fn(&o)
	}
	src, err := regular.Open(in, os.O_RDONLY, "a format-v2 session log")
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	if err := checkOut(info, out, o.overwrite); err != nil {
		return err
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+512))
	if _, err := buf.ReadFrom(src); err != nil {
		return err
	}
	f, err := parse(buf.Bytes())
	if err != nil {
		return err
	}
	res, err := Migrate(f)
	if err != nil {
		return err
	}
	dir := filepath.Dir(out)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	published := false
	defer func() {
		if !published {
			os.Remove(name)
		}
	}()
	err = Write(tmp, res)
	if err == nil {
		err = tmp.Chmod(info.Mode().Perm())
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := publish(name, out, info, o.overwrite); err != nil {
		return err
	}
	published = true
	return atomicfile.SyncDir(dir)
}

// checkOut refuses an output that is the input, or that exists when
// overwriting was not asked for.
func checkOut(in fs.FileInfo, out string, overwrite bool) error {
	cur, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if os.SameFile(in, cur) {
		return refuse(0, -1, "", CaseOutput, "output %s is the input file; the input is never modified", out)
	}
	if !overwrite {
		return refuse(0, -1, "", CaseOutput, "output %s already exists; pass the overwrite option to replace it", out)
	}
	return nil
}

// publish moves the finished temporary file to out. Without overwrite it
// publishes without replacing, so a file created meanwhile is never
// clobbered.
func publish(tmp, out string, in fs.FileInfo, overwrite bool) error {
	if err := checkOut(in, out, overwrite); err != nil {
		return err
	}
	if overwrite {
		return os.Rename(tmp, out)
	}
	if err := atomicfile.PublishNoReplace(tmp, out); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return refuse(0, -1, "", CaseOutput, "output %s already exists; pass the overwrite option to replace it", out)
		}
		return err
	}
	return nil
}
