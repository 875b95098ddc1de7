//go:build !race

package waterfall

const raceEnabled = false
