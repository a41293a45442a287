package logstore

import (
	"errors"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/snapshot/snapshottest"
)

// A failed write (disk full) or fsync (EIO) keeps none of the batch: raft
// sees the error, the store goes on from its last entry, and a reopen
// finds no trace of the failed batch.
func TestStore_FailedWriteOrFsyncKeepsNothing(t *testing.T) {
	dir := t.TempDir()
	ffs := snapshottest.NewFaultFS(snapshottest.LogSegments)
	s, err := Open(dir, Options{SegmentBytes: testSegBytes, FS: ffs})
	if err != nil {
		t.Fatal(err)
	}
	ref := raft.NewInmemStore()
	store := func(from, to uint64, wantErr error) {
		t.Helper()
		logs := entries(from, to, 1)
		err := s.StoreLogs(logs)
		if !errors.Is(err, wantErr) {
			t.Fatalf("StoreLogs(%d..%d) = %v, want %v", from, to, err, wantErr)
		}
		if err == nil {
			ref.StoreLogs(logs)
		}
		compare(t, "after StoreLogs", s, ref)
	}
	store(1, 10, nil)
	ffs.FailWritesAfter(100, syscall.ENOSPC)
	store(11, 20, syscall.ENOSPC)
	ffs.Heal()
	store(11, 20, nil)
	ffs.FailSyncs(syscall.EIO)
	store(21, 25, syscall.EIO)
	ffs.Heal()
	// The batch whose fsync failed must not come back after a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{SegmentBytes: testSegBytes, FS: ffs}); err != nil {
		t.Fatal(err)
	}
	compare(t, "reopened after a failed fsync", s, ref)
	store(21, 25, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	defer s.Close()
	compare(t, "reopened", s, ref)
}
