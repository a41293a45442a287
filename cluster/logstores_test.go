package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data dir whose raft log is raft-boltdb's, from an earlier build, is
// refused by name rather than started afresh beside it.
func TestLogStores_RefusesABoltLog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "raft.db"), []byte("bolt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LogStores(dir); err == nil || !strings.Contains(err.Error(), "raft.db") {
		t.Fatalf("LogStores = %v, want an error naming raft.db", err)
	}
}

func TestLogStores_ReopensItsLog(t *testing.T) {
	dir := t.TempDir()
	s, err := LogStores(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stable.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = LogStores(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Stable.GetUint64([]byte("CurrentTerm")); err != nil || v != 3 {
		t.Fatalf("CurrentTerm = %d, %v after a reopen, want 3", v, err)
	}
}
