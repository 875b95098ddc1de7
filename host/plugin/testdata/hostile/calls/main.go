// Command calls holds the hostile test plugins that misbehave inside a call,
// one per file, each registered under its own name (the name a test loads
// it by): loop, alloc, panic, panic-alternate, huge-output and exit. Each
// behaves on ordinary requests and misbehaves when the route's model is
// "hostile" (panic-alternate: on every second call of an instance), so
// tests can check both the failure and the recovery. They share a module
// so that a test run builds and compiles one module instead of six; an
// instance serves one plugin, so one plugin's state and failures never
// reach another's.
package main

func main() {}
