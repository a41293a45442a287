package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// Part file layout, all big-endian:
//
//	header:  magic "A11PART\x00" | version uint32 (1) | lsn uint64 | kind uint32
//	entries: len uint32 | key uint64 | payload (len bytes), repeated
//	trailer: entry count uint64 | crc uint32
//
// lsn is the LSN of the snapshot that wrote the part.
// kind says what it holds (partTasks, partRuns, partState).
// An entry of length 0 is a tombstone, meaning the key is gone.
// Task entries are in ascending key order.
// crc is CRC32C over every byte before it. A published part never changes.
const (
	partMagic       = "A11PART\x00"
	partVersion     = 1
	partHeaderSize  = len(partMagic) + 4 + 8 + 4
	partEntryHeader = 4 + 8
	// partBufSize is the write buffer. It is small because most parts are small deltas.
	partBufSize = 64 << 10
)

// Kinds of parts, also the suffix of their names.
const (
	partTasks byte = 1 // keyed entries and tombstones, keys below RunKeys
	partState byte = 2 // the whole shared state, unkeyed
	partRuns  byte = 3 // keyed entries and tombstones, keys from RunKeys up
)

// RunKeys is the first key of runs parts. The main control keys its
// runs from it up, apart from its task ids, so that a snapshot writes
// only the runs that changed, as it does tasks, into parts of their own.
const RunKeys uint64 = 1 << 63

// keyedPart reports whether parts of kind hold keyed entries.
func keyedPart(kind byte) bool { return kind == partTasks || kind == partRuns }

// keyedKind is the kind of part that holds key.
func keyedKind(key uint64) byte {
	if key >= RunKeys {
		return partRuns
	}
	return partTasks
}

func partKindName(kind byte) string {
	switch kind {
	case partState:
		return "state"
	case partRuns:
		return "runs"
	}
	return "tasks"
}

// partName is snapshot-<lsn>-<kind>, so it sorts beside its manifest.
func partName(lsn uint64, kind byte) string { return snapName(lsn) + "-" + partKindName(kind) }

// parsePartName parses a part's file name.
func parsePartName(name string) (lsn uint64, kind byte, ok bool) {
	s, ok := strings.CutPrefix(name, snapPrefix)
	if !ok || len(s) <= lsnDigits+1 || s[lsnDigits] != '-' {
		return 0, 0, false
	}
	lsn, ok = parseLSN(s[:lsnDigits])
	switch s[lsnDigits+1:] {
	case "tasks":
		kind = partTasks
	case "state":
		kind = partState
	case "runs":
		kind = partRuns
	default:
		return 0, 0, false
	}
	return lsn, kind, ok
}

// partWriter streams the entries of one part into its temporary file.
type partWriter struct {
	af      *atomicFile
	w       *bufio.Writer
	crc     uint32
	count   uint64
	size    int64
	err     error
	lastKey uint64
	hdr     [partEntryHeader]byte
	// perRange counts entries and images (non-tombstones) per key range.
	perRange  map[uint64]rangeCount
	rangeBits uint
}

type rangeCount struct{ n, images int }

func newPartWriter(fsys FS, path string, lsn uint64, kind byte, rangeBits uint) (*partWriter, error) {
	af, err := createAtomic(fsys, path)
	if err != nil {
		return nil, err
	}
	w := &partWriter{af: af, w: getWriter(af, partBufSize), perRange: map[uint64]rangeCount{}, rangeBits: rangeBits}
	var h [partHeaderSize]byte
	copy(h[:], partMagic)
	binary.BigEndian.PutUint32(h[8:12], partVersion)
	binary.BigEndian.PutUint64(h[12:20], lsn)
	binary.BigEndian.PutUint32(h[20:24], uint32(kind))
	w.write(h[:])
	return w, nil
}

func (w *partWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, p)
	_, w.err = w.w.Write(p)
	w.size += int64(len(p))
}

// put adds an entry. An empty payload is a tombstone.
func (w *partWriter) put(key uint64, payload []byte) error {
	if uint64(len(payload)) > MaxPayload {
		return fmt.Errorf("snapshot entry of %d bytes is larger than MaxPayload", len(payload))
	}
	if w.count > 0 && key <= w.lastKey && w.rangeBits > 0 {
		return fmt.Errorf("snapshot part: key %d after key %d: keys must ascend", key, w.lastKey)
	}
	w.lastKey = key
	binary.BigEndian.PutUint32(w.hdr[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint64(w.hdr[4:12], key)
	w.write(w.hdr[:])
	w.write(payload)
	if w.err == nil {
		w.count++
		if w.rangeBits > 0 {
			rc := w.perRange[key>>w.rangeBits]
			rc.n++
			if len(payload) > 0 {
				rc.images++
			}
			w.perRange[key>>w.rangeBits] = rc
		}
	}
	return w.err
}

// finish writes the trailer and publishes the part: fsync, then rename.
// The directory is not fsynced here. The manifest's fsync of the
// directory, after its own rename, makes the part's name durable too,
// one fsync for every file of a snapshot. A crash before it may leave
// the manifest without a part on some file systems. Then startup falls
// back to the previous snapshot, which stays on disk until then.
// It returns the part's checksum.
func (w *partWriter) finish() (uint32, error) {
	var t [snapTrailerSize]byte
	binary.BigEndian.PutUint64(t[0:8], w.count)
	w.write(t[0:8])
	crc := w.crc
	binary.BigEndian.PutUint32(t[8:12], crc)
	if w.err == nil {
		_, w.err = w.w.Write(t[8:12])
		w.size += 4
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	w.release()
	if w.err != nil {
		w.af.Abort()
		return 0, w.err
	}
	return crc, w.af.Publish()
}

func (w *partWriter) abort() {
	w.release()
	w.af.Abort()
}

// release hands the write buffer back. The writer is done with it.
func (w *partWriter) release() {
	putWriter(w.w)
	w.w = nil
}

// partEntry is what walkPart hands its callback.
// A tombstone has a nil payload.
type partEntry struct {
	key     uint64
	payload []byte
}

// partSummary is what a walk of a part learns about it.
type partSummary struct {
	entries  uint64
	size     int64
	crc      uint32
	perRange map[uint64]rangeCount
}

// walkPart reads the part file at path.
// It checks its header, structure, key order and checksum.
// The header must carry lsn and kind.
// fn, if not nil, is called for each entry before the checksum is known.
// So callers validate first with fn == nil.
// Errors about the content wrap ErrBadSnapshot.
func walkPart(fsys FS, path string, lsn uint64, kind byte, rangeBits uint, fn func(e partEntry) error) (partSummary, error) {
	var sum partSummary
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return sum, err
	}
	sum.size = st.Size()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
	}
	if sum.size < int64(partHeaderSize+snapTrailerSize) {
		return sum, bad("part of %d bytes is too short", sum.size)
	}
	r := partReaders.Get().(*bufio.Reader)
	r.Reset(f)
	defer func() {
		r.Reset(nil)
		partReaders.Put(r)
	}()
	var h [partHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return sum, readErr(err)
	}
	switch v := binary.BigEndian.Uint32(h[8:12]); {
	case string(h[:8]) != partMagic:
		return sum, bad("bad magic")
	case v > partVersion:
		return sum, newerFormat(f, sum.size, path, v, partVersion)
	case v != partVersion:
		return sum, bad("part format version %d", v)
	case binary.BigEndian.Uint64(h[12:20]) != lsn:
		return sum, bad("header LSN %d does not match the file name", binary.BigEndian.Uint64(h[12:20]))
	case binary.BigEndian.Uint32(h[20:24]) != uint32(kind):
		return sum, bad("header kind %d does not match the file name", binary.BigEndian.Uint32(h[20:24]))
	}
	if rangeBits > 0 {
		sum.perRange = map[uint64]rangeCount{}
	}
	crc := crc32.Update(0, castagnoli, h[:])
	body := sum.size - int64(partHeaderSize+snapTrailerSize)
	var eh [partEntryHeader]byte
	var buf []byte
	var lastKey, curR uint64
	var cur rangeCount
	for body > 0 {
		if body < partEntryHeader {
			return sum, bad("entry %d: incomplete header", sum.entries)
		}
		if _, err := io.ReadFull(r, eh[:]); err != nil {
			return sum, readErr(err)
		}
		n := int64(binary.BigEndian.Uint32(eh[0:4]))
		key := binary.BigEndian.Uint64(eh[4:12])
		if n > body-partEntryHeader {
			return sum, bad("entry %d of %d bytes runs into the trailer", sum.entries, n)
		}
		if rangeBits > 0 && sum.entries > 0 && key <= lastKey {
			return sum, bad("entry %d: key %d does not ascend", sum.entries, key)
		}
		if rangeBits > 0 && keyedKind(key) != kind {
			return sum, bad("entry %d: key %d does not belong in a %s part", sum.entries, key, partKindName(kind))
		}
		lastKey = key
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return sum, readErr(err)
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, eh[:]), castagnoli, buf)
		body -= partEntryHeader + n
		if sum.perRange != nil {
			if r := key >> rangeBits; r != curR || sum.entries == 0 {
				if sum.entries > 0 {
					sum.perRange[curR] = cur
				}
				curR, cur = r, sum.perRange[r]
			}
			cur.n++
			if n > 0 {
				cur.images++
			}
		}
		if fn != nil {
			e := partEntry{key: key, payload: buf}
			if n == 0 {
				e.payload = nil
			}
			if err := fn(e); err != nil {
				return sum, fmt.Errorf("entry %d: %w", sum.entries, err)
			}
		}
		sum.entries++
	}
	if sum.perRange != nil && sum.entries > 0 {
		sum.perRange[curR] = cur // keys ascend: each range is one run
	}
	var t [snapTrailerSize]byte
	if _, err := io.ReadFull(r, t[:]); err != nil {
		return sum, readErr(err)
	}
	crc = crc32.Update(crc, castagnoli, t[0:8])
	if got := binary.BigEndian.Uint64(t[0:8]); got != sum.entries {
		return sum, bad("trailer counts %d entries, file holds %d", got, sum.entries)
	}
	if got := binary.BigEndian.Uint32(t[8:12]); got != crc {
		return sum, bad("checksum mismatch")
	}
	sum.crc = crc
	return sum, nil
}

// partReaders are the read buffers of walkPart. A restart reads every
// part twice, and a fresh buffer for each was a megabyte of new pages.
var partReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, snapBufSize) }}

// errNotPart is returned for a name that is not a part's.
var errNotPart = errors.New("not a snapshot part")
