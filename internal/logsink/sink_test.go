package logsink_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/logsink"
)

// gate is the writer behind a Sink under test: it blocks every Write
// until opened, refuses them while failing, and keeps what it took and
// how many calls it got.
type gate struct {
	open    chan struct{}
	entered chan []byte // a copy of each Write's bytes, as the call starts
	failing atomic.Bool

	mu    sync.Mutex
	out   bytes.Buffer
	calls int
}

func newGate(open bool) *gate {
	g := &gate{open: make(chan struct{}), entered: make(chan []byte, 1000)}
	if open {
		close(g.open)
	}
	return g
}

func (g *gate) Write(p []byte) (int, error) {
	select {
	case g.entered <- bytes.Clone(p):
	default:
	}
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if g.failing.Load() {
		return 0, errors.New("refused")
	}
	return g.out.Write(p)
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.String()
}

func (g *gate) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// notice is an easily matched notice.
func notice(n uint64) []byte { return fmt.Appendf(nil, "DROPPED %d\n", n) }

// within fails the test unless f returns within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// writeAll writes each line as one record, failing the test if the Writes
// block: with the writer stuck, a blocking Write would hang the test.
func writeAll(t *testing.T, s *logsink.Sink, lines ...string) {
	t.Helper()
	within(t, 5*time.Second, "Write", func() {
		for _, l := range lines {
			s.Write([]byte(l))
		}
	})
}

func TestSink_KeepsOrder(t *testing.T) {
	g := newGate(true)
	s := logsink.New(g, logsink.Options{Notice: notice})
	var want strings.Builder
	for i := range 5000 {
		line := fmt.Sprintf("record %d\n", i)
		want.WriteString(line)
		n, err := s.Write([]byte(line))
		require.NoError(t, err)
		require.Equal(t, len(line), n)
	}
	require.NoError(t, s.Close(5*time.Second))
	assert.Equal(t, want.String(), g.String())
	assert.Zero(t, s.Dropped())
}

// Write copies: slog reuses its line buffer once Write returns.
func TestSink_CopiesRecord(t *testing.T) {
	g := newGate(false)
	s := logsink.New(g, logsink.Options{Notice: notice})
	line := []byte("first\n")
	within(t, 5*time.Second, "Write", func() { s.Write(line) })
	copy(line, "xxxxx\n")
	close(g.open)
	require.NoError(t, s.Close(5*time.Second))
	assert.Equal(t, "first\n", g.String())
}

// Records of concurrent writers stay whole lines, each writer's in its
// order, none lost.
func TestSink_ConcurrentWriters(t *testing.T) {
	g := newGate(true)
	s := logsink.New(g, logsink.Options{Size: 64 << 20, Notice: notice})
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				s.Write(fmt.Appendf(nil, "w=%d i=%d %s\n", w, i, strings.Repeat("x", i%50)))
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.Close(5*time.Second))
	next := make([]int, writers)
	lines := strings.Split(strings.TrimSuffix(g.String(), "\n"), "\n")
	require.Len(t, lines, writers*each)
	for _, l := range lines {
		var w, i int
		_, err := fmt.Sscanf(l, "w=%d i=%d", &w, &i)
		require.NoError(t, err, "a torn line: %q", l)
		require.Equal(t, fmt.Sprintf("w=%d i=%d %s", w, i, strings.Repeat("x", i%50)), l, "a torn line")
		require.Equal(t, next[w], i, "writer %d out of order", w)
		next[w]++
	}
	assert.Zero(t, s.Dropped())
}

// The drain writes as soon as a record arrives, not on a timer: a test
// reading a daemon's stderr right after a line is logged finds it.
func TestSink_WritesPromptly(t *testing.T) {
	g := newGate(true)
	s := logsink.New(g, logsink.Options{Notice: notice})
	defer s.Close(time.Second)
	for i := range 3 {
		line := fmt.Sprintf("line %d\n", i)
		s.Write([]byte(line))
		select {
		case got := <-g.entered:
			assert.Equal(t, line, string(got))
		case <-time.After(2 * time.Second):
			t.Fatalf("line %d not written without a Close", i)
		}
	}
}

// A writer that blocks for good: Write still returns at once, what does
// not fit is dropped and counted, and once the writer takes again the
// notice follows what was buffered and comes before any later record.
func TestSink_StuckWriter(t *testing.T) {
	g := newGate(false)
	s := logsink.New(g, logsink.Options{Size: 100, Notice: notice})
	defer s.Close(time.Second)
	var want strings.Builder
	within(t, 5*time.Second, "Write with the writer stuck", func() {
		s.Write([]byte("first\n"))
		<-g.entered // the drain is stuck in Write with it
		for i := range 30 {
			line := fmt.Sprintf("rec %04d\n", i) // 9 bytes: 11 fit in 100
			if i < 11 {
				want.WriteString(line)
			}
			s.Write([]byte(line))
		}
	})
	assert.EqualValues(t, 19, s.Dropped())

	close(g.open)
	require.Eventually(t, func() bool { return strings.Contains(g.String(), "DROPPED") }, 5*time.Second, time.Millisecond)
	s.Write([]byte("later\n"))
	require.NoError(t, s.Close(5*time.Second))
	assert.Equal(t, "first\n"+want.String()+"DROPPED 19\nlater\n", g.String())
	assert.Equal(t, 4, g.Calls(), "first, then the records that waited in one Write, the notice, later")
}

// Once one record is dropped every later one is, until the drain takes
// the buffer: a smaller record that would fit must not slip in after the
// gap, ahead of its notice.
func TestSink_OneGap(t *testing.T) {
	g := newGate(false)
	s := logsink.New(g, logsink.Options{Size: 10, Notice: notice})
	defer s.Close(time.Second)
	writeAll(t, s, "first\n")
	<-g.entered
	// aaaaaaa fits (8 of 10 bytes), bbbbbbb does not, and c, which
	// would, is dropped all the same.
	writeAll(t, s, "aaaaaaa\n", "bbbbbbb\n", "c\n")
	close(g.open)
	require.NoError(t, s.Close(5*time.Second))
	assert.Equal(t, "first\naaaaaaa\nDROPPED 2\n", g.String())
	assert.EqualValues(t, 2, s.Dropped())
}

func TestSink_Oversized(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		want    string
		dropped uint64
	}{
		{"fills the buffer exactly", 16, "0123456789abcde\nafter\n", 0},
		{"one byte too long: dropped, never cut", 15, "DROPPED 1\nafter\n", 1},
		{"far too long, and so is after", 4, "DROPPED 1\nDROPPED 1\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(true)
			s := logsink.New(g, logsink.Options{Size: tc.size, Notice: notice})
			s.Write([]byte("0123456789abcde\n"))
			// after must follow the notice: wait for the drain to take the gap
			require.Eventually(t, func() bool { return g.Calls() > 0 }, 5*time.Second, time.Millisecond)
			s.Write([]byte("after\n"))
			require.NoError(t, s.Close(5*time.Second))
			assert.Equal(t, tc.want, g.String())
			assert.Equal(t, tc.dropped, s.Dropped())
		})
	}
}

func TestSink_CloseFlushes(t *testing.T) {
	g := newGate(false)
	s := logsink.New(g, logsink.Options{Notice: notice})
	var want strings.Builder
	for i := range 100 {
		line := fmt.Sprintf("record %d\n", i)
		want.WriteString(line)
		writeAll(t, s, line)
	}
	go func() {
		time.Sleep(50 * time.Millisecond) // Close is waiting by now
		close(g.open)
	}()
	require.NoError(t, s.Close(10*time.Second))
	assert.Equal(t, want.String(), g.String(), "Close returned before the buffer was written")
}

// A writer stuck for good must not hang shutdown.
func TestSink_CloseStuckWriter(t *testing.T) {
	g := newGate(false)
	defer close(g.open) // lets the drain end when the test does
	s := logsink.New(g, logsink.Options{Notice: notice})
	writeAll(t, s, "stuck\n")
	<-g.entered
	writeAll(t, s, "waiting\n")
	start := time.Now()
	var err error
	within(t, 5*time.Second, "Close", func() { err = s.Close(100 * time.Millisecond) })
	assert.ErrorIs(t, err, logsink.ErrStuck)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "Close gave up before its timeout")
	assert.Zero(t, s.Dropped(), "waiting may still be written")
}

// After Close records are dropped and counted, and nothing panics.
func TestSink_WriteAfterClose(t *testing.T) {
	g := newGate(true)
	s := logsink.New(g, logsink.Options{Notice: notice})
	s.Write([]byte("before\n"))
	require.NoError(t, s.Close(5*time.Second))
	n, err := s.Write([]byte("after\n"))
	assert.NoError(t, err)
	assert.Equal(t, 6, n)
	assert.EqualValues(t, 1, s.Dropped())
	require.NoError(t, s.Close(5*time.Second), "a second Close")
	assert.Equal(t, "before\n", g.String())
}

// A writer that fails: its batches are counted as dropped, the drain does
// not retry in a loop, and the notice comes once the writer works again,
// before the next record.
func TestSink_WriterErrors(t *testing.T) {
	g := newGate(true)
	g.failing.Store(true)
	s := logsink.New(g, logsink.Options{Notice: notice})
	defer s.Close(time.Second)
	for i := range 3 {
		s.Write(fmt.Appendf(nil, "lost %d\n", i))
		require.Eventually(t, func() bool { return s.Dropped() == uint64(i+1) }, 5*time.Second, time.Millisecond)
	}
	calls := g.Calls()
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, calls, g.Calls(), "the drain writes with no record to write: a spin")

	g.failing.Store(false)
	s.Write([]byte("back\n"))
	require.NoError(t, s.Close(5*time.Second))
	assert.Equal(t, "DROPPED 3\nback\n", g.String())
	assert.EqualValues(t, 3, s.Dropped())
}
