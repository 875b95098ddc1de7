package embed_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Many sessions run side by side, each in its own goroutine with its own
// agent, and each followed by a subscriber goroutine. Inside one session
// one turn runs at a time: a Run while another is running on it returns
// an error matching host.ErrBusy. Snapshots are safe to read from any
// goroutine, also a subscriber's. One tracer provider and one meter
// provider serve every agent: gen_ai.conversation.id tells the sessions
// apart.
func Example_concurrentSessions() {
	spans := tracetest.NewInMemoryExporter()
	tracing := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tracing.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	metrics := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer metrics.Shutdown(context.Background())

	const sessions = 20
	type outcome struct {
		reason        string
		seen, dropped int
		messages      int
	}
	outcomes := make([]outcome, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			model, err := llm.ParseScript([]byte(script))
			if err != nil {
				panic(err)
			}
			s := host.NewSession(fmt.Sprintf("session-%02d", i), surface.New(), nil)
			agent, err := host.NewAgent(s, host.Config{
				Route: host.Route{Provider: "offline", Model: "script", ContextWindow: 8192},
				Model: llm.NewScripted(model),
				Tools: []host.Tool{shout},

				TracerProvider: tracing,
				MeterProvider:  metrics,
			})
			if err != nil {
				panic(err)
			}
			sub := s.Subscribe(0)
			seen := make(chan int)
			go func() { // the subscriber
				n := 0
				for range sub.Events() {
					n++
					s.Snapshot() // calling back into the session is safe
				}
				seen <- n
			}()
			res, err := agent.Run(context.Background(), agent.UserMessage("Say hello loudly."))
			if err != nil {
				panic(err)
			}
			if err := s.Close(); err != nil { // ends the subscription
				panic(err)
			}
			outcomes[i] = outcome{reason: res.Reason.Kind, seen: <-seen, dropped: int(sub.Dropped()),
				messages: len(s.Snapshot().Messages())}
		}()
	}
	wg.Wait()
	same := true
	for _, o := range outcomes[1:] {
		same = same && o == outcomes[0]
	}
	fmt.Println(sessions, "sessions, all alike:", same)
	fmt.Printf("each: turn %s, %d events seen by its subscriber, %d dropped, %d messages\n",
		outcomes[0].reason, outcomes[0].seen, outcomes[0].dropped, outcomes[0].messages)
	conversations := map[string]bool{}
	for _, s := range spans.GetSpans() {
		if s.Name == "invoke_agent" {
			for _, kv := range s.Attributes {
				if kv.Key == "gen_ai.conversation.id" {
					conversations[kv.Value.AsString()] = true
				}
			}
		}
	}
	fmt.Println("turns traced:", len(conversations), "conversations")
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "gen_ai.client.operation.duration" {
				var n uint64
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					n += dp.Count
				}
				fmt.Println("model calls measured:", n)
			}
		}
	}
	// Output:
	// 20 sessions, all alike: true
	// each: turn completed, 14 events seen by its subscriber, 0 dropped, 4 messages
	// turns traced: 20 conversations
	// model calls measured: 40
}
