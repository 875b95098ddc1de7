package waterfall

import (
	"fmt"
	"runtime/debug"
)

// Failure describes one failed handler call: an error it returned, a panic
// (*PanicError) or an overrun deadline (wrapping context.DeadlineExceeded).
// Run returns a *Failure as its error under the Abort policy and lists
// Failure values in its report under the Skip policy.
type Failure struct {
	Chain   string // Config.Name of the chain, may be empty
	Handler string // name the handler was registered under
	Err     error  // the cause
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s: handler %q failed: %v", chainLabel(f.Chain), f.Handler, f.Err)
}

// Unwrap returns the cause, so errors.Is and errors.As see through a Failure.
func (f *Failure) Unwrap() error { return f.Err }

// PanicError is the cause recorded when a handler panics.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the handler goroutine's stack at the panic
}

func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
