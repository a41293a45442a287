//go:build !race

package wire_test

// raceEnabled skips allocation counts, which the race detector changes.
const raceEnabled = false
