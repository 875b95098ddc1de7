//go:build race

package sqlite_test

// longProcs is the number of processes TestManyProcesses starts at once
// with WEIR_LONG=1: fewer under the race detector, whose processes each
// take several times the CPU.
const longProcs = 10
