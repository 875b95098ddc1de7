// Package pardec decodes stored event encodings on several goroutines and
// hands the events over in order, as the file store's loader does, so that
// loading a large session from a database costs about what loading its
// file does.
package pardec

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/weirhost/weir/surface"
)

// Source returns the next stored event's seq and encoding (which the
// decoder may keep), or ok false at the end. It is called from one
// goroutine at a time.
type Source func() (seq int64, raw []byte, ok bool, err error)

const chunkSize = 256

type chunk struct {
	seqs []int64
	raws [][]byte
	evs  []surface.Event
	err  error
	done chan struct{}
}

// Decode reads src to its end, decodes the encodings on GOMAXPROCS
// goroutines (with prepared payloads, as the file loader does), and calls
// fn with each seq and event in src's order. It stops at the first error
// of src, of a decoding or of fn, and returns it; src is not called again
// once Decode returns.
func Decode(ctx context.Context, src Source, fn func(seq int64, e surface.Event) error) error {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *chunk, workers)
	order := make(chan *chunk, 2*workers)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := surface.Decoder{Prepare: true, Alias: true}
			for c := range work {
				c.evs = make([]surface.Event, 0, len(c.raws))
				for i, b := range c.raws {
					e, err := dec.Decode(b)
					if err != nil {
						c.err = fmt.Errorf("stored event seq %d: %w", c.seqs[i], err)
						break
					}
					c.evs = append(c.evs, e)
				}
				c.raws = nil
				close(c.done)
			}
		}()
	}
	var srcErr error
	var prod sync.WaitGroup
	prod.Add(1)
	go func() {
		defer prod.Done()
		defer close(order)
		defer close(work)
		for {
			c := &chunk{done: make(chan struct{})}
			for len(c.raws) < chunkSize {
				seq, raw, ok, err := src()
				if err != nil {
					srcErr = err
					break
				}
				if !ok {
					break
				}
				c.seqs = append(c.seqs, seq)
				c.raws = append(c.raws, raw)
			}
			n := len(c.raws)
			if n == 0 {
				return
			}
			select {
			case order <- c:
			case <-quit:
				return
			}
			work <- c
			if srcErr != nil || n < chunkSize {
				return
			}
		}
	}()
	var err error
	for c := range order {
		<-c.done
		if err == nil {
			err = c.err
		}
		for i := 0; err == nil && i < len(c.evs); i++ {
			err = fn(c.seqs[i], c.evs[i])
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			close(quit)
			for c := range order { // let the producer finish
				<-c.done
			}
			break
		}
	}
	prod.Wait()
	wg.Wait()
	if err == nil {
		err = srcErr
	}
	return err
}
