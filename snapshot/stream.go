package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// WriteStream writes a whole snapshot (format 1, as WriteSnapshot writes
// its file) to dst, for a state as of lsn. fill adds the entries. A
// replicated main control keeps its snapshots in Raft's store, not in a
// data dir. So they are the same bytes, written to a stream.
func WriteStream(dst io.Writer, lsn uint64, fill func(w *SnapshotWriter) error) error {
	sw := newSnapshotWriter(dst, lsn, snapVersion)
	if err := fill(sw); err != nil {
		sw.done = true
		sw.release()
		return err
	}
	return sw.finish()
}

// ReadStream reads a whole snapshot written by WriteStream (or a format 1
// snapshot file) from r. It calls entry for each entry, in order, before
// the checksum is known: so the caller loads into a state it discards
// on error. It returns the snapshot's LSN.
func ReadStream(r io.Reader, entry func(payload []byte) error) (uint64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
	}
	br := bufio.NewReaderSize(r, snapBufSize)
	var h [snapHeaderSize]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, bad("header: %v", err)
	}
	version := binary.BigEndian.Uint32(h[8:12])
	switch {
	case string(h[:8]) != snapMagic:
		return 0, bad("bad magic")
	case version != snapVersion:
		return 0, bad("format version %d where a whole snapshot (%d) must come", version, snapVersion)
	}
	lsn := binary.BigEndian.Uint64(h[12:20])
	crc := crc32.Update(0, castagnoli, h[:])
	var entries uint64
	var lb [4]byte
	var buf []byte
	for {
		// The trailer is the stream's last 12 bytes: peek one past it.
		ahead, err := br.Peek(snapTrailerSize + 1)
		if len(ahead) == snapTrailerSize && errors.Is(err, io.EOF) {
			break
		}
		if len(ahead) < snapTrailerSize+1 {
			return 0, bad("entry %d: stream ends inside the trailer or an entry (%v)", entries, err)
		}
		if _, err := io.ReadFull(br, lb[:]); err != nil {
			return 0, bad("entry %d: %v", entries, err)
		}
		n := binary.BigEndian.Uint32(lb[:])
		if uint64(n) > MaxPayload {
			return 0, bad("entry %d of %d bytes is larger than MaxPayload", entries, n)
		}
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return 0, bad("entry %d: %v", entries, err)
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, lb[:]), castagnoli, buf)
		if err := entry(buf); err != nil {
			return 0, fmt.Errorf("snapshot entry %d: %w", entries, err)
		}
		entries++
	}
	var t [snapTrailerSize]byte
	if _, err := io.ReadFull(br, t[:]); err != nil {
		return 0, bad("trailer: %v", err)
	}
	crc = crc32.Update(crc, castagnoli, t[0:8])
	if got := binary.BigEndian.Uint64(t[0:8]); got != entries {
		return 0, bad("trailer counts %d entries, stream holds %d", got, entries)
	}
	if got := binary.BigEndian.Uint32(t[8:12]); got != crc {
		return 0, bad("checksum mismatch")
	}
	return lsn, nil
}
