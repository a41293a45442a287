package core

import (
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Observer is told about events worth counting (metrics). Its methods are
// called synchronously on the core's goroutine and must be quick.
type Observer interface {
	// Dispatched reports a task sent to an executor after waiting this long in
	// pending.
	Dispatched(wait time.Duration)
	// Retried reports a failed attempt of a task that will run again.
	Retried()
	// TimedOut reports a running task that passed its timeout_ms.
	TimedOut()
	// StartTimedOut reports a dispatched task that did not start in time.
	StartTimedOut()
	// ExecutorLost reports an executor silent for the heartbeat timeout.
	ExecutorLost()
	// Ended reports a task that reached a terminal state.
	Ended(s State)
	// Admin reports an admin request (one of AdminOps) that changed n tasks.
	// A dry run, or one that changed none, reports 0.
	Admin(op string, n int)
}

// The admin operations Observer.Admin names, by their messages' kinds.
const (
	OpRequeue      = string(wire.KindRequeue)
	OpRequeueWhere = string(wire.KindRequeueWhere)
	OpCancelWhere  = string(wire.KindCancelWhere)
	OpPurgeWhere   = string(wire.KindPurgeWhere)
)

// AdminOps lists the operations Observer.Admin reports.
var AdminOps = []string{OpRequeue, OpRequeueWhere, OpCancelWhere, OpPurgeWhere}

// nopObserver is the default Observer.
type nopObserver struct{}

func (nopObserver) Dispatched(time.Duration) {}
func (nopObserver) Retried()                 {}
func (nopObserver) TimedOut()                {}
func (nopObserver) StartTimedOut()           {}
func (nopObserver) ExecutorLost()            {}
func (nopObserver) Ended(State)              {}
func (nopObserver) Admin(string, int)        {}
