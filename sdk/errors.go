package sdk

import (
	"errors"

	"github.com/weirhost/weir/sdk/abi"
)

// Errors of host queries, matched with errors.Is.
var (
	ErrNotGranted  = errors.New("not granted")
	ErrNotFound    = errors.New("not found")
	ErrBadArgument = errors.New("bad argument")
	ErrHostFailed  = errors.New("host failed")
	ErrCancelled   = errors.New("cancelled")
)

// Errors a token meter with Plugin.WarmState returns (ABI minor 2).
var (
	// ErrStateUnknown: the request named its state by key alone and this
	// instance does not hold it; the host sends it again with the blob.
	ErrStateUnknown = errors.New("state unknown")
	// ErrStateKept, from Observe when the request set StateOptional: the
	// new state is kept in memory under the request's NextStateKey and no
	// blob is sent.
	ErrStateKept = errors.New("state kept")
)

// HostError is the error of a failed host query.
type HostError struct {
	Import string // the host import, e.g. "summarize"
	Code   int32  // the import's status code, e.g. abi.HostNotGranted
	Reason string // the host's explanation, when it gave one
}

func (e *HostError) Error() string {
	s := "host " + e.Import + ": " + abi.HostStatusText(int64(e.Code))
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is matches the sentinel of the error's status code.
func (e *HostError) Is(target error) bool {
	switch e.Code {
	case abi.HostNotGranted:
		return target == ErrNotGranted
	case abi.HostNotFound:
		return target == ErrNotFound
	case abi.HostBadArgument:
		return target == ErrBadArgument
	case abi.HostFailed:
		return target == ErrHostFailed
	case abi.HostCancelled:
		return target == ErrCancelled
	}
	return false
}
