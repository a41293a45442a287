package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ProblemKind classifies a Problem found in the log.
type ProblemKind string

const (
	// ProblemTorn is a torn tail of the newest segment: a record that runs
	// past the end of the file, fails its checksum as the last record, or
	// is followed only by zero bytes. Open cuts it off with a warning.
	ProblemTorn ProblemKind = "torn"
	// ProblemCorrupt is any other bad record. Open refuses to start unless
	// RecoverTruncate is set.
	ProblemCorrupt ProblemKind = "corrupt"
)

// Problem is a bad record found in a log segment.
type Problem struct {
	File   string      `json:"file"`   // segment file name
	Offset int64       `json:"offset"` // byte offset of the bad record; the log is valid up to here
	Kind   ProblemKind `json:"kind"`
	Detail string      `json:"detail"` // e.g. "checksum mismatch"
	Bytes  int64       `json:"bytes"`  // bytes from Offset to the end of the file
}

// segment is one log segment file as the Store knows it.
type segment struct {
	name    string
	first   uint64 // LSN of the first record, from the name
	last    uint64 // LSN of the last record; first-1 when empty
	size    int64  // bytes of whole, valid records
	records int
	// fileSize is the size found by the scan at Open, before any cut.
	fileSize int64
}

// scanSegment reads a whole segment, checking every record, and returns it
// with the first problem found (nil if none). newest says whether the
// segment is the newest one, where a bad tail is torn rather than corrupt.
// The error is for I/O failures only.
func scanSegment(fsys FS, dir, name string, first uint64, newest bool) (segment, *Problem, error) {
	seg := segment{name: name, first: first, last: first - 1}
	f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
	if err != nil {
		return seg, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return seg, nil, err
	}
	size := st.Size()
	seg.fileSize = size
	rr := newRecordReader(f, size, first)
	for {
		lsn, _, err := rr.next()
		if err == io.EOF {
			return seg, nil, nil
		}
		if err != nil {
			var re *recordError
			if !errors.As(err, &re) {
				return seg, nil, err
			}
			p := &Problem{File: name, Offset: re.off, Kind: ProblemCorrupt, Detail: re.detail, Bytes: size - re.off}
			if newest {
				torn, err := isTorn(f, re, size, rr.expect)
				if err != nil {
					return seg, nil, err
				}
				if torn {
					p.Kind = ProblemTorn
				}
			}
			return seg, p, nil
		}
		seg.last = lsn
		seg.size = rr.off
		seg.records++
	}
}

// isTorn applies the torn-tail rules of spec section 7 to a bad record of
// the newest segment, whose LSN should have been lsn.
//
// A record that runs past the end of the file is torn only if no valid
// record follows it: a write torn by a crash leaves nothing whole after
// the record it tore, but a flipped bit in a length in the middle of the
// log also makes its record run past the end, and cutting there would drop
// every confirmed record after it (and hand their task ids out again). A
// whole record further on, with a later LSN and a good checksum, shows the
// length is corrupt: startup stops, as for any corruption.
func isTorn(f File, re *recordError, size int64, lsn uint64) (bool, error) {
	switch {
	case re.kind == errPastEnd:
		later, err := validRecordAfter(f, re.off, size, lsn)
		return !later, err
	case re.kind == errChecksum && re.end == size:
		return true, nil
	}
	return zeroFrom(f, re.off, size)
}

// validRecordAfter reports whether a whole record with a good checksum and
// an LSN from lsn on starts anywhere in (off, size) of f.
func validRecordAfter(f File, off, size int64, lsn uint64) (bool, error) {
	if size-off <= recordHeaderSize {
		return false, nil
	}
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return false, readErr(err)
	}
	// Every record takes at least a header: the LSNs that fit after off.
	maxLSN := lsn + uint64(len(buf))/recordHeaderSize
	for i := 1; i+recordHeaderSize <= len(buf); i++ {
		h := buf[i:]
		if l := recordLSN(h); l < lsn || l > maxLSN {
			continue
		}
		n := int64(binary.BigEndian.Uint32(h[0:4]))
		if n > int64(len(h)-recordHeaderSize) {
			continue
		}
		if recordCRC(h, h[recordHeaderSize:recordHeaderSize+n]) == binary.BigEndian.Uint32(h[4:8]) {
			return true, nil
		}
	}
	return false, nil
}

// zeroFrom reports whether bytes [off, size) of f are all zero (a
// preallocated or partially persisted tail).
func zeroFrom(f File, off, size int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for off < size {
		n := int(min(int64(len(buf)), size-off))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return false, readErr(err)
		}
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		off += int64(n)
	}
	return true, nil
}

// readSegment calls fn for every record of seg with LSN > after, in order.
// It reads only the seg.size bytes validated by Open.
func readSegment(fsys FS, dir string, seg segment, after uint64, fn func(lsn uint64, payload []byte) error) error {
	f, err := fsys.OpenFile(filepath.Join(dir, seg.name), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot open log segment %s: %w", seg.name, err)
	}
	defer f.Close()
	rr := newRecordReader(f, seg.size, seg.first)
	for {
		lsn, payload, err := rr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read log segment %s: %w", seg.name, err)
		}
		if lsn <= after || fn == nil {
			continue
		}
		if err := fn(lsn, payload); err != nil {
			return fmt.Errorf("replay of record %d: %w", lsn, err)
		}
	}
}
