package core

import "time"

// Observer is told about events worth counting (metrics). Its methods are
// called synchronously on the core's goroutine and must be quick.
type Observer interface {
	// Dispatched: a task went to an executor after waiting this long in
	// pending.
	Dispatched(wait time.Duration)
	// Retried: an attempt failed and the task will run again.
	Retried()
	// TimedOut: a running task passed its timeout_ms.
	TimedOut()
	// StartTimedOut: a dispatched task was not started in time.
	StartTimedOut()
	// ExecutorLost: an executor went silent for the heartbeat timeout.
	ExecutorLost()
	// Ended: a task reached a terminal state.
	Ended(s State)
}

// nopObserver is the default Observer.
type nopObserver struct{}

func (nopObserver) Dispatched(time.Duration) {}
func (nopObserver) Retried()                 {}
func (nopObserver) TimedOut()                {}
func (nopObserver) StartTimedOut()           {}
func (nopObserver) ExecutorLost()            {}
func (nopObserver) Ended(State)              {}
