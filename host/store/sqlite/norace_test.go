//go:build !race

package sqlite_test

// procs is the number of processes TestManyProcesses starts at once.
const procs = 50
