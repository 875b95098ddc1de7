//go:build !race

package sqlite_test

// longProcs is the number of processes TestManyProcesses starts at once
// with WEIR_LONG=1.
const longProcs = 50
