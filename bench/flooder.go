package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// floodBatch bounds the bytes a flooder writes at once, about two thousand small requests.
// That is enough that the main control always finds a full socket buffer.
// The harness pays one syscall per batch.
const floodBatch = 40 << 10

// flooder is one client connection pipelining one cheap request
// as fast as the main control takes it.
// A writer goroutine sends batches while fewer than window requests are unanswered.
// A reader goroutine counts the replies.
// Every request is the same frame, so there is nothing to match.
// The reader only counts frames (frameCounter).
type flooder struct {
	fc     *frameConn
	batch  []byte // the request frame, repeated to fill floodBatch
	frame  int    // its length
	window int64

	sent     atomic.Int64 // requests written
	answered atomic.Int64 // replies read, errors included
	errs     atomic.Int64 // error replies
	wake     chan struct{}
}

// floodRequest returns the frame a flooder sends for request kind kind, one of FloodRequests.
// The witness sends it too, with its own req.
func floodRequest(kind, req string) ([]byte, error) {
	b := wire.Begin(nil, wire.Kind(kind))
	b.Str("req", req)
	if kind == "state_get" {
		// A key nobody sets. The reply is the state_version alone,
		// however much shared state the main control holds.
		b.Str("keys", "apollo11-bench-flood")
	}
	return b.Finish()
}

func newFlooder(fc *frameConn, frame []byte, window int) *flooder {
	n := max(floodBatch/len(frame), 1)
	batch := make([]byte, 0, n*len(frame))
	for range n {
		batch = append(batch, frame...)
	}
	return &flooder{fc: fc, batch: batch, frame: len(frame), window: int64(window), wake: make(chan struct{}, 1)}
}

// write sends requests until ctx ends or a write fails.
// A write blocked on a full socket returns only when the connection is closed.
func (f *flooder) write(ctx context.Context) error {
	perBatch := int64(len(f.batch) / f.frame)
	for ctx.Err() == nil {
		sent := f.sent.Load()
		room := f.answered.Load() + f.window - sent
		if room <= 0 {
			select {
			case <-f.wake:
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		n := min(room, perBatch)
		if err := f.fc.write(f.batch[:n*int64(f.frame)]); err != nil {
			return err
		}
		f.sent.Add(n)
	}
	return nil
}

// read counts replies until the connection fails or is closed.
func (f *flooder) read() error {
	buf := make([]byte, readChunk)
	var fc frameCounter
	// Bytes read with the handshake's reply, if any, come first.
	if err := fc.feed(f.fc.buf[f.fc.start:f.fc.end]); err != nil {
		return err
	}
	for {
		n, err := f.fc.c.Read(buf)
		if ferr := fc.feed(buf[:n]); ferr != nil {
			return ferr
		}
		f.answered.Store(fc.frames)
		f.errs.Store(fc.errors)
		select {
		case f.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return err
		}
	}
}
