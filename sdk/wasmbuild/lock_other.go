//go:build !unix

package wasmbuild

import "context"

// lockDir is a no-op where flock(2) is missing: processes sharing a cache
// may then build the same module twice, which costs time, not correctness
// (each build is renamed into place whole).
func lockDir(context.Context, string) (func(), error) { return func() {}, nil }
