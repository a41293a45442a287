//go:build !race

package reliability_test

// raceEnabled scales the default counts down: the harness runs under the
// race detector (the child binaries do not).
const raceEnabled = false
