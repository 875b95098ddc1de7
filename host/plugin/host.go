package plugin

import (
	"context"

	"github.com/weirhost/weir/sdk/abi"
)

// Host is the caller's view of the session, answering the guest's host
// imports during one call. Implementations return ErrNotGranted for a
// capability they do not offer and ErrNotFound for a missing item; any other
// error reaches the guest as "host failed" with its text. Methods run on the
// calling goroutine, one at a time, and must not call the plugin.
//
// Embed UnimplementedHost to implement only part of it.
type Host interface {
	// SurfaceNodes lists the current surface in order.
	SurfaceNodes(ctx context.Context) ([]abi.Node, error)
	// Message returns the message JSON of the surface node holding seq.
	// The runtime only reads the bytes (it copies them into the guest's
	// memory), so a host may return memory it shares.
	Message(ctx context.Context, seq int64) ([]byte, error)
	// Generations returns the surface generations and the log length.
	Generations(ctx context.Context) (abi.Generations, error)
	// Header returns the current request header JSON (ErrNotFound if none).
	Header(ctx context.Context) ([]byte, error)
	// Measure returns the token meter's current measurement.
	Measure(ctx context.Context) (*abi.Measurement, error)
	// Summarize runs a summarization model call. Its time does not count
	// against the plugin call's deadline; bound it with ctx.
	Summarize(ctx context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error)
	// CountTokens counts text with the named native tokenizer. text aliases
	// guest memory: do not keep it.
	CountTokens(ctx context.Context, tokenizer string, text []byte) (int, error)
}

// EventHost is a Host that also answers the event import (ABI minor 2):
// the type and stored data JSON of the committed event at seq, any event
// of the log. A Host that does not implement it answers that import with
// "not granted".
type EventHost interface {
	Host
	Event(ctx context.Context, seq int64) (*abi.EventData, error)
}

// UnimplementedHost answers every query with ErrNotGranted.
type UnimplementedHost struct{}

// SurfaceNodes implements Host.
func (UnimplementedHost) SurfaceNodes(context.Context) ([]abi.Node, error) { return nil, ErrNotGranted }

// Message implements Host.
func (UnimplementedHost) Message(context.Context, int64) ([]byte, error) { return nil, ErrNotGranted }

// Event implements EventHost.
func (UnimplementedHost) Event(context.Context, int64) (*abi.EventData, error) {
	return nil, ErrNotGranted
}

// Generations implements Host.
func (UnimplementedHost) Generations(context.Context) (abi.Generations, error) {
	return abi.Generations{}, ErrNotGranted
}

// Header implements Host.
func (UnimplementedHost) Header(context.Context) ([]byte, error) { return nil, ErrNotGranted }

// Measure implements Host.
func (UnimplementedHost) Measure(context.Context) (*abi.Measurement, error) {
	return nil, ErrNotGranted
}

// Summarize implements Host.
func (UnimplementedHost) Summarize(context.Context, *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
	return nil, ErrNotGranted
}

// CountTokens implements Host.
func (UnimplementedHost) CountTokens(context.Context, string, []byte) (int, error) {
	return 0, ErrNotGranted
}
