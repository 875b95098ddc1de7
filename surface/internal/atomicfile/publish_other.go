//go:build !linux

package atomicfile

// PublishNoReplace moves tmp to path unless path exists, with link(2) and
// unlink. An existing path fails with an error matching fs.ErrExist.
func PublishNoReplace(tmp, path string) error { return linkNoReplace(tmp, path) }
