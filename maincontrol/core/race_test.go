//go:build race

package core

// raceEnabled shortens the property test, which the race detector slows
// about tenfold.
const raceEnabled = true
