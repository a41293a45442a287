package core

import (
	"testing"
	"time"
)

// BenchmarkCore_KeyedWaitSubmit times one `submit wait=true` that names
// the key of a task already pending: the keyed duplicate of the wait
// flood, which the event loop answers many thousands of times a second.
// The connection closes at its wait cap and another takes its place.
func BenchmarkCore_KeyedWaitSubmit(b *testing.B) {
	c, _ := benchCore(b, &ManualClock{T: time.UnixMilli(1_700_000_000_000)}, func(cfg *Config) { cfg.Unlogged = true })
	c.Open(1)
	c.Handle(1, msg("hello", "req", "h"))
	c.Handle(1, msg("submit", "req", "s", "task_type", "nobody", "key", "K"))
	wait := msg("submit", "req", "w", "task_type", "nobody", "key", "K", "wait", "true")
	peer, held := PeerID(2), 0
	c.Open(peer)
	c.Handle(peer, msg("hello", "req", "h"))
	b.ReportAllocs()
	for b.Loop() {
		if held == maxWaitsPerConn {
			b.StopTimer()
			c.Closed(peer)
			peer++
			held = 0
			c.Open(peer)
			c.Handle(peer, msg("hello", "req", "h"))
			b.StartTimer()
		}
		c.Handle(peer, wait)
		held++
	}
}

// BenchmarkCore_KeyedWaitRefused times one `submit wait=true` refused
// because all connections together hold --max-waits: the frame a wait
// flood past the global cap sends most, answered with an error each time.
func BenchmarkCore_KeyedWaitRefused(b *testing.B) {
	c, _ := benchCore(b, &ManualClock{T: time.UnixMilli(1_700_000_000_000)}, func(cfg *Config) {
		cfg.Unlogged = true
		cfg.MaxWaits = 1
	})
	c.Open(1)
	c.Handle(1, msg("hello", "req", "h"))
	c.Handle(1, msg("submit", "req", "s", "task_type", "nobody", "key", "K", "wait", "true"))
	c.Open(2)
	c.Handle(2, msg("hello", "req", "h"))
	wait := msg("submit", "req", "w", "task_type", "nobody", "key", "K", "wait", "true")
	b.ReportAllocs()
	for b.Loop() {
		c.Handle(2, wait)
	}
}
