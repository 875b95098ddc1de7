package embed_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// Many sessions run side by side, each in its own goroutine with its own
// agent, and each followed by a subscriber goroutine. Inside one session
// one turn runs at a time: a Run while another is running on it returns
// an error matching host.ErrBusy. Snapshots are safe to read from any
// goroutine, also a subscriber's.
func Example_concurrentSessions() {
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
	// Output:
	// 20 sessions, all alike: true
	// each: turn completed, 14 events seen by its subscriber, 0 dropped, 4 messages
}
