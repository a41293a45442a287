package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/apollo11/apollo11/snapshot"
)

// The small files written whole: a file header, then one record numbered 1.
const (
	stableName = "stable"
	firstName  = "first"
)

var (
	stableFormat = snapshot.LogFormat{Magic: "\xffA11RST\x00", Version: 1}
	firstFormat  = snapshot.LogFormat{Magic: "\xffA11RFI\x00", Version: 1}
)

// ErrKeyNotFound is a stable key never set. Raft matches its text.
var ErrKeyNotFound = errors.New("not found")

// stable is raft's stable store: a few keys (term, vote), rewritten whole
// on every Set. It changes only at elections, so the whole file is cheap.
type stable struct {
	mu sync.Mutex
	kv map[string][]byte
}

// Set stores val under key, durably, before it returns.
func (s *Store) Set(key, val []byte) error {
	st := &s.stable
	st.mu.Lock()
	defer st.mu.Unlock()
	kv := maps.Clone(st.kv)
	if kv == nil {
		kv = map[string][]byte{}
	}
	kv[string(key)] = bytes.Clone(val)
	if err := writeSmall(s.fsys, s.dir, stableName, stableFormat, encodeKV(kv)); err != nil {
		return err
	}
	st.kv = kv
	return nil
}

// Get returns the value of key, ErrKeyNotFound when it was never set.
func (s *Store) Get(key []byte) ([]byte, error) {
	st := &s.stable
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.kv[string(key)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return bytes.Clone(v), nil
}

// SetUint64 stores val under key as 8 big-endian bytes.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the number under key, ErrKeyNotFound when never set.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raft stable key %q holds %d bytes, not a number", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// encodeKV encodes pairs in key order: count uint32, then for each
// key_len uint32 | key | val_len uint32 | val.
func encodeKV(kv map[string][]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(kv)))
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv[k])))
		b = append(b, kv[k]...)
	}
	return b
}

func decodeKV(b []byte) (map[string][]byte, error) {
	field := func() ([]byte, bool) {
		if len(b) < 4 || int(binary.BigEndian.Uint32(b)) > len(b)-4 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint32(b))
		v := bytes.Clone(b[4 : 4+n])
		b = b[4+n:]
		return v, true
	}
	if len(b) < 4 {
		return nil, errors.New("no pair count")
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	kv := map[string][]byte{}
	for i := uint32(0); i < n; i++ {
		k, ok := field()
		v, ok2 := field()
		if !ok || !ok2 {
			return nil, fmt.Errorf("pair %d of %d cut short", i, n)
		}
		kv[string(k)] = v
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes after the last pair", len(b))
	}
	return kv, nil
}

// writeFirst records index as the first one kept. The file appears whole
// (renameio fsyncs it before the rename), but the rename is not made
// durable here. A crash may so bring back the previous first file, and
// with it entries a snapshot already covers. Raft tolerates that: it
// deletes them again after its next snapshot. It saves a directory fsync
// that would hold up StoreLogs on every compaction.
func writeFirst(fsys snapshot.FS, dir string, index uint64) error {
	b := snapshot.AppendFileHeader(nil, firstFormat)
	b = snapshot.AppendRecord(b, 1, binary.BigEndian.AppendUint64(nil, index))
	p, err := fsys.CreateAtomic(filepath.Join(dir, firstName), 0o600)
	if err != nil {
		return fmt.Errorf("raft log: cannot create %s: %w", firstName, err)
	}
	if _, err := p.Write(b); err != nil {
		p.Cleanup()
		return fmt.Errorf("raft log: cannot write %s: %w", firstName, err)
	}
	if err := p.CloseAtomicallyReplace(); err != nil {
		p.Cleanup()
		return fmt.Errorf("raft log: cannot put %s in place: %w", firstName, err)
	}
	return nil
}

// removeFirst removes the first file; the caller fsyncs the directory.
func removeFirst(fsys snapshot.FS, dir string) error {
	if err := fsys.Remove(filepath.Join(dir, firstName)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cannot remove raft log %s: %w", firstName, err)
	}
	return nil
}

// writeSmall writes a small file whole or not at all.
func writeSmall(fsys snapshot.FS, dir, name string, lf snapshot.LogFormat, payload []byte) error {
	b := snapshot.AppendFileHeader(nil, lf)
	b = snapshot.AppendRecord(b, 1, payload)
	if err := snapshot.WriteFileAtomic(fsys, filepath.Join(dir, name), b); err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	return nil
}

// readSmall reads a file writeSmall wrote. It returns nil, nil when the
// file does not exist.
func readSmall(fsys snapshot.FS, dir, name string, lf snapshot.LogFormat) ([]byte, error) {
	f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", name, err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", name, err)
	}
	if err := snapshot.CheckFileHeader(name, b, lf); err != nil {
		return nil, err
	}
	payload, err := snapshot.DecodeRecord(b[snapshot.FileHeaderSize:], 1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return payload, nil
}

// load reads the stable file and the first file.
func (st *stable) load(fsys snapshot.FS, dir string) (first uint64, err error) {
	b, err := readSmall(fsys, dir, stableName, stableFormat)
	if err != nil {
		return 0, err
	}
	st.kv = map[string][]byte{}
	if b != nil {
		if st.kv, err = decodeKV(b); err != nil {
			return 0, fmt.Errorf("%s: %w", stableName, err)
		}
	}
	b, err = readSmall(fsys, dir, firstName, firstFormat)
	if err != nil || b == nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("%s: %d bytes, not an index", firstName, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
