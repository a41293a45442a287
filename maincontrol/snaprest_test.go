package maincontrol

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A paced snapshot owes a rest once written, and the next may not start
// before it is over, however many records are due. Under load small
// snapshots ran back to back at full speed: their files' creation and
// fsyncs are no pacer steps. The rest delays the next snapshot, never
// drops it: a tick starts it once the rest is over, with no new record.
func TestSnapshot_RestsBeforeTheNext(t *testing.T) {
	s, err := newServer(Config{DataDir: t.TempDir(), SnapshotEvery: 1, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer s.closeStore()

	s.mu.Lock()
	s.gate.Record([]byte("a change"))
	s.maybeSnapshot()
	require.True(t, s.snap.running, "due at one record")
	done := s.snap.done
	s.mu.Unlock()
	waitDone(t, done)

	s.mu.Lock()
	defer s.mu.Unlock()
	require.False(t, s.snap.running)
	assert.False(t, s.snap.restUntil.IsZero(), "a paced snapshot owes a rest")
	s.snap.restUntil = time.Now().Add(time.Hour) // a rest that outlasts the test
	s.gate.Record([]byte("another change"))
	s.maybeSnapshot()
	assert.False(t, s.snap.running, "no snapshot starts during the rest")
	assert.False(t, s.nextDue().After(s.timers.lastTick.Add(s.cfg.TickInterval)),
		"ticks keep looking while a snapshot is owed")

	s.snap.restUntil = time.Now().Add(-time.Millisecond)
	s.tick(time.Now())
	require.True(t, s.snap.running, "the tick after the rest starts the owed snapshot")
	assert.True(t, s.snap.restUntil.IsZero())
	done = s.snap.done
	s.mu.Unlock()
	waitDone(t, done)
	s.mu.Lock()
}

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the snapshot did not end")
	}
}

// A stop's last snapshot does not wait out a rest.
func TestSnapshot_FinalSnapshotIgnoresTheRest(t *testing.T) {
	s, err := newServer(Config{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer s.closeStore()
	s.mu.Lock()
	s.gate.Record([]byte("a change"))
	s.snap.restUntil = time.Now().Add(time.Hour)
	s.mu.Unlock()
	s.finalSnapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, s.gate.unsnapped, "the last snapshot covers every record")
}

// A Config made in code with a duty outside [MinSnapshotDuty, 1] is
// refused, naming the setting.
func TestConfig_SnapshotDutyRange(t *testing.T) {
	for _, d := range []float64{0.01, 1.5, -1} {
		_, err := Config{SnapshotDuty: d}.withDefaults()
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), "SnapshotDuty")
	}
	cfg, err := Config{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultSnapshotDuty, cfg.SnapshotDuty)
}
