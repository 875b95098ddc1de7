//go:build !unix

package plugin_test

import "time"

// processCPU is not measured on this platform: the benchmarks that report
// CPU time report none.
func processCPU() time.Duration { return 0 }
