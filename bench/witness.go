package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// witnessTimeout is the longest one witness round trip may take before the run fails.
// An unfair main control makes round trips long.
// One that stopped answering makes them endless.
const witnessTimeout = 30 * time.Second

// witness is a well-behaved client. It sends one request at a time.
// It sends the next only after the reply and a pause.
// bench flood measures what its round trips become while other connections flood.
type witness struct {
	fc       *frameConn
	kind     string // the request, one of FloodRequests
	interval time.Duration
	n        int          // requests so far, for their req
	rounds   atomic.Int64 // round trips of the current phase, for the progress bar
}

// witnessTimes are one phase's round trips.
// Arrival ends when the reply reached the witness's socket.
// That is the kernel's receive timestamp, on Linux.
// Under a flood the harness's own goroutines compete for the CPU too.
// So read ends only when the witness's goroutine got to run.
type witnessTimes struct {
	arrival, read *Histogram
}

// run does round trips until end (at least one) or until ctx ends, and returns them.
// A failed round trip ends the phase with its error.
// One cut short by ctx is not counted.
func (w *witness) run(ctx context.Context, end time.Time) (witnessTimes, error) {
	t := witnessTimes{arrival: NewHistogram(), read: NewHistogram()}
	w.rounds.Store(0)
	for first := true; (first || time.Now().Before(end)) && ctx.Err() == nil; first = false {
		toArrival, toRead, err := w.roundTrip(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return t, nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return t, fmt.Errorf("witness: no reply to %s in %s", w.kind, witnessTimeout)
			}
			return t, fmt.Errorf("witness: %w", err)
		}
		t.arrival.RecordDuration(toArrival)
		t.read.RecordDuration(toRead)
		w.rounds.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(w.interval):
		}
	}
	return t, nil
}

// roundTrip sends one request and waits for its reply.
// ctx's end cuts the wait short through the read deadline (see RunFlood).
func (w *witness) roundTrip(ctx context.Context) (toArrival, toRead time.Duration, err error) {
	w.n++
	req := "w" + strconv.Itoa(w.n)
	frame, err := floodRequest(w.kind, req)
	if err != nil {
		return 0, 0, err
	}
	// Set the deadline before the check.
	// A ctx ending after the check then sets its own, earlier deadline after this one.
	_ = w.fc.c.SetReadDeadline(time.Now().Add(witnessTimeout))
	if ctx.Err() != nil {
		return 0, 0, ctx.Err()
	}
	start := time.Now()
	if err := w.fc.write(frame); err != nil {
		return 0, 0, err
	}
	found := false
	for !found {
		err := w.fc.readBatch(func(m *wire.Message) error {
			if m.Value("req") != req {
				return nil // nothing else is asked on this connection
			}
			found = true
			if m.Kind() == wire.KindError {
				return fmt.Errorf("%w: %s answered error code=%s message=%s", ErrRefused, w.kind, m.Value("code"), m.Value("message"))
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	read := time.Now()
	arrived := read
	if w.fc.rx != nil {
		arrived = w.fc.arrived
	}
	return arrived.Sub(start), read.Sub(start), nil
}
