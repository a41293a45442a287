//go:build race

package maincontrol_test

// raceEnabled shortens floods that the race detector slows about tenfold.
const raceEnabled = true
