// connloss.go: how a run notices and reports connections it lost mid-run.

package bench

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"
)

// connLoss counts the run's connections that failed while the run still needed them.
// A main control that went away (killed, crashed, restarted) closes them all.
// Waiting out --drain for replies that cannot come would only hide that.
type connLoss struct {
	mu      sync.Mutex
	closing bool            // the harness is closing them itself, so not a loss
	conns   map[string]bool // the failed ones (a producer's reader and writer both see its failure)
	first   error
	lost    chan struct{} // closed at the first loss
}

func newConnLoss() *connLoss { return &connLoss{lost: make(chan struct{}), conns: map[string]bool{}} }

// add records that connection conn failed with err.
func (l *connLoss) add(conn string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing || l.conns[conn] {
		return
	}
	if len(l.conns) == 0 {
		l.first = connError(conn, err)
		close(l.lost)
	}
	l.conns[conn] = true
}

// stop marks the end of the run.
// Errors from here on are the harness closing the connections.
func (l *connLoss) stop() {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
}

func (l *connLoss) get() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns), l.first
}

// settled is get, after a moment for the rest of n connections to fail.
// It waits when some have failed, or when failed says something else of the run's did.
// A main control that went away closed every connection.
// But the others notice a moment after the first.
// The count should say "all" when it was all.
func (l *connLoss) settled(n int, failed bool) (int, error) {
	nLost, first := l.get()
	for settle := time.Now().Add(250 * time.Millisecond); (nLost > 0 || failed) && nLost < n && time.Now().Before(settle); {
		time.Sleep(10 * time.Millisecond)
		nLost, first = l.get()
	}
	return nLost, first
}

// connError names how a connection failed, in the words of what the
// main control did.
func connError(what string, err error) error {
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: connection closed by the main control", what)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%s: connection reset by the main control", what)
	case errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%s: connection closed by the main control (broken pipe)", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}
