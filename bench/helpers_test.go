package bench_test

import (
	"testing"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// startMainControl runs an in-memory main control in this process until
// the test ends and returns its address.
func startMainControl(t testing.TB, mutate func(*maincontrol.Config)) string {
	t.Helper()
	var cfg maincontrol.Config
	if mutate != nil {
		mutate(&cfg)
	}
	addr, _ := maincontroltest.Start(t, cfg)
	return addr
}
