package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Snapshot file layout, all big-endian:
//
//	header:  magic "A11SNAP\x00" | version uint32 (1) | lsn uint64
//	entries: len uint32 | payload (len bytes), repeated
//	trailer: entry count uint64 | crc uint32
//
// crc is CRC32C over every byte before it (header, entries and count).
const (
	snapMagic       = "A11SNAP\x00"
	snapVersion     = 1
	snapHeaderSize  = len(snapMagic) + 4 + 8
	snapTrailerSize = 8 + 4
	snapBufSize     = 1 << 20
)

// SnapshotWriter streams the entries of one snapshot into its file.
// It is handed to the fill function of Store.WriteSnapshot.
// It is valid only during that call.
type SnapshotWriter struct {
	w     *bufio.Writer
	crc   uint32
	count uint64
	size  int64
	err   error
	done  bool
	lenb  [4]byte // scratch for entry lengths (a local would escape)
}

func newSnapshotWriter(dst io.Writer, lsn uint64, version uint32) *SnapshotWriter {
	size := snapBufSize
	if isManifest(version) {
		size = partBufSize // a manifest is small
	}
	w := &SnapshotWriter{w: getWriter(dst, size)}
	var h [snapHeaderSize]byte
	copy(h[:], snapMagic)
	binary.BigEndian.PutUint32(h[8:12], version)
	binary.BigEndian.PutUint64(h[12:20], lsn)
	w.write(h[:])
	return w
}

// Add appends one entry.
// The payload is copied into the file buffer before Add returns.
// After the first error every call returns it.
func (w *SnapshotWriter) Add(payload []byte) error {
	if w.done {
		return errors.New("snapshot: SnapshotWriter used after its fill function returned")
	}
	if uint64(len(payload)) > MaxPayload {
		return fmt.Errorf("snapshot entry of %d bytes is larger than MaxPayload", len(payload))
	}
	binary.BigEndian.PutUint32(w.lenb[:], uint32(len(payload)))
	w.write(w.lenb[:])
	w.write(payload)
	if w.err == nil {
		w.count++
	}
	return w.err
}

// Count returns the number of entries added so far.
func (w *SnapshotWriter) Count() uint64 { return w.count }

func (w *SnapshotWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, p)
	_, w.err = w.w.Write(p)
	w.size += int64(len(p))
}

// finish writes the trailer and flushes the buffer.
func (w *SnapshotWriter) finish() error {
	w.done = true
	var t [snapTrailerSize]byte
	binary.BigEndian.PutUint64(t[0:8], w.count)
	w.write(t[0:8])
	binary.BigEndian.PutUint32(t[8:12], w.crc)
	if w.err == nil {
		_, w.err = w.w.Write(t[8:12])
		w.size += 4
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	w.release()
	return w.err
}

// release hands the write buffer back, once no more bytes go through it.
func (w *SnapshotWriter) release() {
	putWriter(w.w)
	w.w = nil
}

// walkSnapshot reads the snapshot file at path.
// It checks its header, which must carry lsn, its structure and its checksum.
// If fn is non-nil it is called for each entry, in order, before the checksum is known.
// So callers validate first with fn == nil.
// Errors about the file's content wrap ErrBadSnapshot.
func walkSnapshot(fsys FS, path string, lsn uint64, fn func(payload []byte) error) (entries uint64, size int64, err error) {
	var vfn func(uint32, []byte) error
	if fn != nil {
		vfn = func(_ uint32, p []byte) error { return fn(p) }
	}
	_, entries, size, err = walkSnap(fsys, path, lsn, vfn)
	return entries, size, err
}

// walkSnap is walkSnapshot that also returns the file's format version.
// That is 1 for a whole snapshot and 2 for a manifest (manifest.go).
func walkSnap(fsys FS, path string, lsn uint64, fn func(version uint32, payload []byte) error) (version uint32, entries uint64, size int64, err error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	size = st.Size()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
	}
	if size < int64(snapHeaderSize+snapTrailerSize) {
		return 0, 0, size, bad("file of %d bytes is too short", size)
	}
	r := bufio.NewReaderSize(f, int(min(size, snapBufSize)))
	var h [snapHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, size, readErr(err)
	}
	version = binary.BigEndian.Uint32(h[8:12])
	switch {
	case string(h[:8]) != snapMagic:
		return 0, 0, size, bad("bad magic")
	case version > manifestVersion:
		return 0, 0, size, newerFormat(f, size, path, version, manifestVersion)
	case version < snapVersion:
		return 0, 0, size, bad("format version %d", version)
	case binary.BigEndian.Uint64(h[12:20]) != lsn:
		return 0, 0, size, bad("header LSN %d does not match the file name", binary.BigEndian.Uint64(h[12:20]))
	}
	crc := crc32.Update(0, castagnoli, h[:])
	body := size - int64(snapHeaderSize+snapTrailerSize)
	var lb [4]byte
	var buf []byte
	for body > 0 {
		if body < 4 {
			return version, entries, size, bad("entry %d: incomplete length", entries)
		}
		if _, err := io.ReadFull(r, lb[:]); err != nil {
			return version, entries, size, readErr(err)
		}
		n := int64(binary.BigEndian.Uint32(lb[:]))
		if n > body-4 {
			return version, entries, size, bad("entry %d of %d bytes runs into the trailer", entries, n)
		}
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return version, entries, size, readErr(err)
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, lb[:]), castagnoli, buf)
		body -= 4 + n
		if fn != nil {
			if err := fn(version, buf); err != nil {
				return version, entries, size, fmt.Errorf("snapshot entry %d: %w", entries, err)
			}
		}
		entries++
	}
	var t [snapTrailerSize]byte
	if _, err := io.ReadFull(r, t[:]); err != nil {
		return version, entries, size, readErr(err)
	}
	crc = crc32.Update(crc, castagnoli, t[0:8])
	if got := binary.BigEndian.Uint64(t[0:8]); got != entries {
		return version, entries, size, bad("trailer counts %d entries, file holds %d", got, entries)
	}
	if got := binary.BigEndian.Uint32(t[8:12]); got != crc {
		return version, entries, size, bad("checksum mismatch")
	}
	return version, entries, size, nil
}

// newerFormat is the error for a file whose header names a newer format.
// The version is trusted only when the trailer checksum holds.
// Every format keeps that checksum over every byte before it.
// A flipped version byte is damage, so Open falls back instead of refusing the data dir.
func newerFormat(f File, size int64, path string, version, known uint32) error {
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size-4)); err != nil {
		return readErr(err)
	}
	var c [4]byte
	if _, err := f.ReadAt(c[:], size-4); err != nil {
		return readErr(err)
	}
	if binary.BigEndian.Uint32(c[:]) != h.Sum32() {
		return fmt.Errorf("%w: format version %d with a checksum mismatch", ErrBadSnapshot, version)
	}
	return checkFormat(filepath.Base(path), version, known)
}
