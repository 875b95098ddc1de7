// Package waterfall runs an ordered chain of handlers that together produce one
// value, such as the host's agent/pre-step decision or agent/request config
// (behaviour spec, section 9).
//
// # Model: fold left
//
// A [Chain] is a left fold. [Chain.Run] starts from an initial value (the
// default, computed by the caller before Run), hands it to the first handler,
// hands that handler's output to the second, and so on; the last output is the
// result:
//
//	value = initial
//	for each handler h in order: value = h(ctx, value)
//
// This is the simpler of the two forms allowed by spec 9.1, and it differs from
// the middleware form (handler(payload, next)) in three ways:
//
//   - All the work a handler does happens after the default value was
//     computed, and after every handler ordered before it has returned. There
//     is no "before next()" phase: work that a middleware handler would do
//     before delegating (for example, compaction acting before the default
//     pre-step decision is built) runs here after the default exists, and sees
//     it as its input.
//   - There is no "after next()" phase either, so there is no reverse-order
//     post-processing. A handler that wants the last word must be ordered last
//     (highest priority number).
//   - A handler cannot short-circuit the handlers after it; it can only
//     replace the value they receive. The only ways to stop a run early are a
//     failure under the [Abort] policy and cancellation of the run's context.
//
// # Ordering
//
// Handlers run in ascending priority: a lower number runs first, and the
// default priority is 0 (see [Priority]). Handlers with equal priority run in
// registration order. The order is stable: removing a handler never reorders
// the others.
//
// Every handler has a name, unique within its chain. [Chain.Add] rejects a
// duplicate with an error that wraps [ErrDuplicate]. Add returns a function
// that removes exactly that registration; [Chain.Remove] removes by name.
//
// # Immutable values
//
// Values are immutable snapshots by contract. A handler must not change the
// value it receives in place (no writing into a map, slice element or pointed-to
// struct it was given); it returns a replacement instead. The chain relies on
// this: under the [Skip] policy the input of a failed handler continues down
// the chain, and a handler abandoned at its deadline (see below) may still be
// reading its input while later handlers run.
//
// For value types that share memory (maps, slices, pointers), set
// [Config.Clone]. The chain then calls Clone on the current value before each
// handler and hands the handler that copy, so a handler that breaks the
// contract can only damage its own copy: neither the caller's initial value,
// nor the value a later handler receives, nor the value that continues after a
// skipped failure is affected. Clone does not protect against a handler that
// keeps a reference to the value it returned and changes it afterwards.
//
// # Deadlines and the guard goroutine
//
// Each handler call can have a deadline: [Config.Timeout] sets one for every
// handler of a chain, and the [Timeout] option overrides it for one handler
// (Timeout(0) removes it). With a deadline, the handler gets a context derived
// from the run's context that expires after the timeout, and it runs on a
// separate goroutine while Run waits for either its result or the deadline.
// When the deadline passes first, Run stops waiting, records a timeout
// failure, and moves on; the handler is never preempted. Its goroutine is
// abandoned: whatever it returns later, or any panic it raises later, is
// captured and discarded, and the chain never reads the late result. This is
// why values must be immutable snapshots (or protected by Clone): the abandoned
// handler may still hold and read its input.
//
// Without a deadline the handler runs inline, on the goroutine that called
// Run, with the run's context. This avoids the guard goroutine, its channel
// and its timer context, which cost about a hundred times more than calling a
// trivial handler inline (microseconds and eight allocations per handler,
// against tens of nanoseconds and none; see BenchmarkRun), so a chain of
// inline handlers runs without allocating. The price is that an inline handler that ignores its
// context holds Run until it returns; give handlers you do not trust a
// deadline.
//
// # Failures and policy
//
// A handler fails when it returns a non-nil error, panics (the panic is
// recovered and reported as a [*PanicError] carrying the panic value), or does
// not return before its deadline (the cause then wraps
// [context.DeadlineExceeded]). Each failure is described by a [Failure] naming
// the chain and the handler. The policy decides what happens next:
//
//   - [Abort] (the default): Run stops and returns the *Failure as its error.
//     errors.As(err, &f) yields the handler's name and errors.Is / errors.As
//     reach the cause.
//   - [Skip]: the handler's output is dropped, the value it received continues
//     to the next handler, and the Failure is appended to the report Run
//     returns alongside the value.
//
// [Config.Policy] sets the policy of a chain and the [OnFailure] option
// overrides it for one handler.
//
// # Cancellation
//
// Run checks the run's context before each handler. If the context is done,
// Run stops and returns an error that wraps ctx.Err() (and the context's
// cause, when one was set). If the context ends while a handler with a
// deadline is running, Run stops waiting for it at once. A handler error
// observed while the run's context is done is reported as cancellation, not
// as a Failure, whatever the policy. Cancellation errors are not *Failure
// values.
//
// Run does not check the context after the last handler returns, so a
// successful Run can race with a cancellation. Callers must re-check their
// context after Run returns before acting on the value, as the agent loop does
// after each waterfall (spec 9.1).
//
// # Concurrency
//
// A Chain is safe for concurrent use. Add and Remove may run while other
// goroutines call Run; each Run works on a snapshot of the handler list taken
// when it starts, so a registration change affects only runs that start after
// it.
package waterfall
