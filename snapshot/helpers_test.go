package snapshot_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/snapshot"
)

// testOptions returns Options for dir whose log goes to the returned
// buffer, so tests can check warnings.
func testOptions(dir string) (snapshot.Options, *syncbuf.Buffer) {
	lb := &syncbuf.Buffer{}
	h := slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})
	return snapshot.Options{Dir: dir, Logger: slog.New(h)}, lb
}

// rec is one replayed log record.
type rec struct {
	LSN     uint64
	Payload string
}

// replayed is everything Replay delivered.
type replayed struct {
	SnapLSN uint64
	Entries []string
	Records []rec
}

// MustOpen opens a Store and closes it at the end of the test.
func MustOpen(tb testing.TB, opts snapshot.Options) *snapshot.Store {
	tb.Helper()
	s, err := snapshot.Open(opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// replay runs Replay on s and collects what it delivers.
func replay(tb testing.TB, s *snapshot.Store) replayed {
	tb.Helper()
	var r replayed
	lsn, err := s.Replay(
		func(p []byte) error { r.Entries = append(r.Entries, string(p)); return nil },
		func(lsn uint64, p []byte) error { r.Records = append(r.Records, rec{lsn, string(p)}); return nil },
	)
	require.NoError(tb, err)
	r.SnapLSN = lsn
	return r
}

// reopen opens the dir, replays it and closes it again.
func reopen(tb testing.TB, opts snapshot.Options) replayed {
	tb.Helper()
	s, err := snapshot.Open(opts)
	require.NoError(tb, err)
	r := replay(tb, s)
	require.NoError(tb, s.Close())
	return r
}

// MustStart opens, replays and starts a Store.
func MustStart(tb testing.TB, opts snapshot.Options) (*snapshot.Store, replayed) {
	tb.Helper()
	s := MustOpen(tb, opts)
	r := replay(tb, s)
	s.Start(nil, nil)
	return s, r
}

func payload(lsn uint64) string { return fmt.Sprintf("type=change\nlsn=%d\ntask_id=t-%06d", lsn, lsn) }

// appendN appends n records whose payloads are payload(lsn) and returns
// the last LSN.
func appendN(tb testing.TB, s *snapshot.Store, n int) uint64 {
	tb.Helper()
	var last uint64
	for i := 0; i < n; i++ {
		want := s.LastLSN() + 1
		last = s.Append([]byte(payload(want)))
		require.Equal(tb, want, last)
	}
	return last
}

// wantRecords returns records from..to with payload(lsn).
func wantRecords(from, to uint64) []rec {
	var out []rec
	for l := from; l <= to; l++ {
		out = append(out, rec{l, payload(l)})
	}
	return out
}

func waitDurable(tb testing.TB, s *snapshot.Store, lsn uint64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(tb, s.WaitDurable(ctx, lsn))
}

// files lists the dir's regular files with a digest of each.
func files(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(tb, err)
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(tb, err)
		out[e.Name()] = fmt.Sprintf("%d:%x", len(b), sha256.Sum256(b))
	}
	return out
}

// names lists the dir's file names matching the glob, sorted.
func names(tb testing.TB, dir, glob string) []string {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join(dir, glob))
	require.NoError(tb, err)
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	sort.Strings(m)
	return m
}

func segments(tb testing.TB, dir string) []string { return names(tb, dir, "*.log") }

// temps lists temporary files: renameio's (".*") and older ones ("*.tmp").
func temps(tb testing.TB, dir string) []string {
	return append(names(tb, dir, ".*"), names(tb, dir, "*.tmp")...)
}

func snapshots(tb testing.TB, dir string) []string {
	var out []string
	for _, n := range names(tb, dir, "snapshot-*") {
		if !strings.HasSuffix(n, ".tmp") {
			out = append(out, n)
		}
	}
	return out
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	st, err := os.Stat(path)
	require.NoError(tb, err)
	return st.Size()
}

// modifyFile applies fn to a file's content.
func modifyFile(tb testing.TB, path string, fn func([]byte) []byte) {
	tb.Helper()
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(path, fn(b), 0o644))
}

// recordSize is the on-disk size of the record payload(lsn).
func recordSize(lsn uint64) int64 { return int64(16 + len(payload(lsn))) }

// fill returns a WriteSnapshot fill function adding the given entries.
func fill(entries ...string) func(w *snapshot.SnapshotWriter) error {
	return func(w *snapshot.SnapshotWriter) error {
		for _, e := range entries {
			if err := w.Add([]byte(e)); err != nil {
				return err
			}
		}
		return nil
	}
}
