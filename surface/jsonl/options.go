package jsonl

import (
	"runtime"

	"github.com/weirhost/weir/surface"
)

// Option configures loading and writing.
type Option func(*config)

type config struct {
	sync    bool
	workers int
	block   int
	logOpts []surface.Option
	noAdmit bool // benchmarks: decode only
	each    func(surface.Event) error
}

func newConfig(opts []Option) *config {
	c := &config{sync: true, workers: runtime.GOMAXPROCS(0), block: 512 << 10}
	for _, o := range opts {
		o(c)
	}
	c.workers = max(c.workers, 1)
	c.block = max(c.block, 4<<10)
	return c
}

// NoSync turns fsync off: appends are acknowledged once written to the
// operating system, not once durable. Only for tests and benchmarks.
func NoSync() Option { return func(c *config) { c.sync = false } }

// Workers sets how many goroutines decode lines while loading (default
// GOMAXPROCS).
func Workers(n int) Option { return func(c *config) { c.workers = n } }

// LogOptions passes options (such as the clock) to the restored surface.Log.
func LogOptions(opts ...surface.Option) Option {
	return func(c *config) { c.logOpts = append(c.logOpts, opts...) }
}

// blockSize sets the size of the blocks the loader hands to its decoders.
func blockSize(n int) Option { return func(c *config) { c.block = n } }

// decodeOnly makes a load decode without admitting (benchmarks measure the
// decoding share with it); the result has an empty Log.
func decodeOnly() Option { return func(c *config) { c.noAdmit = true } }

// Each hands every decoded event, in seq order, to fn instead of admitting
// it into a surface.Log: the loaded result then has no Log, and the caller
// (host.Open, through the store contract) admits the events itself, so a
// large session is not held twice. Decoding keeps its prepared payloads, so
// the caller's Log.Admit is as fast as the loader's own. fn may keep the
// events; an error from it aborts the load and is returned, as a
// *LineError naming the line when it is a *surface.Error (an admission
// failure).
func Each(fn func(surface.Event) error) Option { return func(c *config) { c.each = fn } }
