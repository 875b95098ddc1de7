//go:build race

package sqlite_test

// procs is the number of processes TestManyProcesses starts at once: fewer
// under the race detector, whose processes each take several times the
// CPU (the plain test run starts the full 50).
const procs = 10
