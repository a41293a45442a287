package maincontrol

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
)

// A snapshot waiting for records the failed disk never makes durable gives
// up once a stop is under way, so that the stop ends.
func TestSnapshot_GivesUpWhenStoppingUnwritable(t *testing.T) {
	ffs := snapshottest.NewFaultFS(nil)
	var logs syncbuf.Buffer
	s, err := newServer(Config{DataDir: t.TempDir(), FS: ffs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer s.closeStore()
	ffs.FailSyncs(errors.New("disk on fire"))

	s.mu.Lock()
	s.gate.Record([]byte("a change the disk never takes"))
	s.startSnapshot(1)
	done := s.snap.done
	s.mu.Unlock()
	select {
	case <-done:
		t.Fatal("the snapshot did not wait for its records")
	case <-time.After(50 * time.Millisecond):
	}

	s.mu.Lock()
	s.stopping = true
	s.core.SetAvailable(false) // as onHealth does when the writer reports
	s.giveUpSnapshot()
	s.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the snapshot still waits for the disk")
	}
	assert.Contains(t, logs.String(), "snapshot abandoned: stopping while the log cannot be written")
	assert.False(t, s.snap.running)
}
