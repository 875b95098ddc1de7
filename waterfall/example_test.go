package waterfall_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirhost/weir/waterfall"
)

// A pre-step style chain: the default decision is computed first, then each
// handler may replace it. A failing handler is skipped and reported.
func Example() {
	type decision struct {
		enter    bool
		messages []string
	}
	chain := waterfall.New(waterfall.Config[decision]{
		Name:    "agent/pre-step",
		Timeout: time.Second,
		Policy:  waterfall.Skip,
		// Slices share memory: give every handler its own copy.
		Clone: func(d decision) decision {
			d.messages = append([]string(nil), d.messages...)
			return d
		},
	})

	_, _ = chain.Add("runtime-context", func(_ context.Context, d decision) (decision, error) {
		d.messages = append(d.messages, "<runtime context>")
		return d, nil
	})
	_, _ = chain.Add("compaction", func(_ context.Context, d decision) (decision, error) {
		return d, errors.New("summarizer unavailable")
	}, waterfall.Priority(-10)) // lower runs first
	_, _ = chain.Add("guard", func(_ context.Context, d decision) (decision, error) {
		d.enter = len(d.messages) > 0
		return d, nil
	}, waterfall.Priority(10))

	fmt.Println(chain.Names())

	initial := decision{messages: []string{"hello"}} // the default, computed before Run
	ctx := context.Background()
	got, skipped, err := chain.Run(ctx, initial)
	if err != nil || ctx.Err() != nil { // re-check cancellation after the run
		fmt.Println("stopped:", err)
		return
	}
	fmt.Println(got.enter, got.messages)
	for _, f := range skipped {
		fmt.Println("skipped:", f.Error())
	}
	// Output:
	// [compaction runtime-context guard]
	// true [hello <runtime context>]
	// skipped: waterfall "agent/pre-step": handler "compaction" failed: summarizer unavailable
}

// Under the default Abort policy a failure stops the run; the error names the
// handler and wraps the cause.
func ExampleChain_Run_abort() {
	errQuota := errors.New("quota exceeded")
	chain := waterfall.New(waterfall.Config[int]{Name: "agent/request"})
	_, _ = chain.Add("double", func(_ context.Context, v int) (int, error) { return v * 2, nil })
	_, _ = chain.Add("limit", func(_ context.Context, v int) (int, error) { return 0, errQuota })

	v, _, err := chain.Run(context.Background(), 21)
	var f *waterfall.Failure
	fmt.Println(v, errors.As(err, &f), f.Handler, errors.Is(err, errQuota))
	fmt.Println(err)
	// Output:
	// 42 true limit true
	// waterfall "agent/request": handler "limit" failed: quota exceeded
}
