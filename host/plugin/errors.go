package plugin

import (
	"errors"
	"strconv"
)

// Failure classes, matched with errors.Is on any error of this package.
var (
	ErrInvalidModule   = errors.New("invalid module")    // refused at load
	ErrDeadline        = errors.New("deadline exceeded") // the call ran out of time
	ErrCancelled       = errors.New("cancelled")         // the caller's context ended
	ErrTrap            = errors.New("trap")              // the guest trapped or exited
	ErrMalformedOutput = errors.New("malformed output")  // the output frame was invalid
	ErrOutputTooLarge  = errors.New("output too large")  // the output frame exceeded the limit
	ErrPanic           = errors.New("panic")             // the guest reported a recovered panic
	ErrPluginFailed    = errors.New("plugin error")      // the guest reported it could not do the work
	ErrRejected        = errors.New("request rejected")  // the guest found the request malformed
	ErrUnsupported     = errors.New("unsupported")       // the plugin does not provide the method
	ErrStateUnknown    = errors.New("state unknown")     // the instance does not hold the state the request named by key
	ErrInputTooLarge   = errors.New("input too large")   // the request exceeded the input limit
	ErrClosed          = errors.New("closed")            // the plugin or runtime was closed
	ErrNotGranted      = errors.New("not granted")       // Host: the capability is not available
	ErrNotFound        = errors.New("not found")         // Host: the queried item does not exist
)

// Error is the error of a plugin operation.
type Error struct {
	Plugin   string // the name the plugin was loaded under
	Op       string // e.g. "load", "call prompt.render"
	Class    error  // one of the Err* sentinels
	Detail   string // what happened, e.g. "deadline 50ms exceeded"
	Replaced bool   // the instance was discarded
	Err      error  // underlying error, if any
}

func (e *Error) Error() string {
	s := "plugin " + strconv.Quote(e.Plugin) + ": " + e.Op + ": " + e.Detail
	if e.Replaced {
		s += "; instance replaced"
	}
	return s
}

// Unwrap exposes the class and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Class, e.Err}
	}
	return []error{e.Class}
}
