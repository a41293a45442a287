package snapshot

import (
	"bytes"
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
	// ProblemTorn is a torn tail of the newest segment. It is a record
	// that runs past the end of the file, fails its checksum as the last
	// record, or is followed only by zero bytes. Open cuts it off with a
	// warning.
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
	// Bridge is set on a corrupt record that RecoverTruncate got past
	// without cutting the log, because a snapshot holds every record it
	// drops. Inspect sets it on what RecoverTruncate would bridge.
	Bridge *Bridge `json:"bridge,omitempty"`
}

// Bridge is how RecoverTruncate got past a corrupt record. The records
// from FirstLSN to LastLSN are unreadable. The log resumes with LastLSN+1
// at ResumeOffset in the damaged file. Every record before that one is
// dropped. The damaged segment and the segments before it are removed,
// and the records kept are rewritten into Segment. Snapshot holds them
// all, so nothing Replay needs is lost. An older snapshot can no longer
// be a fallback.
type Bridge struct {
	FirstLSN     uint64 `json:"first_lsn"`     // the LSN the corrupt record should have had
	LastLSN      uint64 `json:"last_lsn"`      // the last LSN skipped
	ResumeOffset int64  `json:"resume_offset"` // offset of record LastLSN+1 in the damaged file
	Snapshot     string `json:"snapshot"`      // the snapshot holding every record dropped
	Segment      string `json:"segment"`       // the segment file the log now starts with (with ReadOnly: would start with)
}

// segment is one log segment file as the Store knows it.
type segment struct {
	name  string
	first uint64 // LSN of the first record: from the name, except in a bridged view (start > header)
	last  uint64 // LSN of the last record; first-1 when empty
	// header is the size of the segment's file header. It is
	// fileHeaderSize, or 0 in a segment an older binary wrote (format 0,
	// no header).
	header int64
	// start is the offset in the file of record first. It is header,
	// except in a read-only Store's view of a segment whose damaged head
	// RecoverTruncate bridges (see recovery.bridge). That view skips the
	// head without rewriting the file.
	start   int64
	size    int64 // bytes of whole, valid records from start
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
	hdr, p, err := readSegHeader(f, name, size, newest)
	if err != nil || p != nil {
		return seg, p, err
	}
	seg.header, seg.start = hdr, hdr
	sc, err := scanRecords(f, name, hdr, size, first, newest, nil)
	seg.last, seg.size, seg.records = sc.Last, sc.End-hdr, sc.Records
	return seg, sc.Problem, err
}

// scanRecords checks the records of file name (f, of size bytes) from
// offset start on, the first with LSN first. It calls fn, when not nil,
// for each whole record. It stops at the first bad record. Its problem is
// torn or corrupt by the rules of spec section 7 (isTorn). The error is
// for I/O failures only.
func scanRecords(f File, name string, start, size int64, first uint64, newest bool, fn func(lsn uint64, off int64, payload []byte)) (LogScan, error) {
	sc := LogScan{Start: start, End: start, Last: first - 1}
	rr := newRecordReader(io.NewSectionReader(f, start, size-start), start, size, first)
	for {
		off := rr.off
		lsn, payload, err := rr.next()
		if err == io.EOF {
			return sc, nil
		}
		if err != nil {
			var re *recordError
			if !errors.As(err, &re) {
				return sc, err
			}
			p := &Problem{File: name, Offset: re.off, Kind: ProblemCorrupt, Detail: re.detail, Bytes: size - re.off}
			if newest {
				torn, err := isTorn(f, re, size, rr.expect)
				if err != nil {
					return sc, err
				}
				if torn {
					p.Kind = ProblemTorn
				}
			}
			sc.Problem = p
			return sc, nil
		}
		if fn != nil {
			fn(lsn, off, payload)
		}
		sc.Last, sc.End = lsn, rr.off
		sc.Records++
	}
}

// readSegHeader reads the file header of segment name (f, of size bytes).
// It returns the offset of its first record. That is fileHeaderSize, or 0
// for a segment of an older binary, which has none.
func readSegHeader(f File, name string, size int64, newest bool) (int64, *Problem, error) {
	return readLogHeader(f, name, size, newest, LogFormat{Magic: segMagic, Version: segVersion}, true)
}

// readLogHeader reads the file header of log file name (f, of size bytes),
// of format lf. A file without one is format 0 when headerless allows it.
// A header cut short or damaged is a problem at offset 0. It is torn when
// it is all the newest file holds, as after a crash while the file was
// being created. A newer format is an error.
func readLogHeader(f File, name string, size int64, newest bool, lf LogFormat, headerless bool) (int64, *Problem, error) {
	b := make([]byte, min(size, fileHeaderSize))
	if _, err := f.ReadAt(b, 0); err != nil {
		return 0, nil, readErr(err)
	}
	state, version, err := parseFileHeader(name, b, lf.Magic, lf.Version)
	switch {
	case err != nil:
		return 0, nil, err
	case state == headerOK:
		return fileHeaderSize, nil, nil
	case state == headerNone && headerless:
		return 0, nil, nil
	}
	p := &Problem{File: name, Kind: ProblemCorrupt, Bytes: size, Detail: "segment header cut short"}
	switch state {
	case headerBad:
		p.Detail = fmt.Sprintf("bad segment header (checksum mismatch or version %d)", version)
	case headerNone:
		p.Detail = "no segment header"
	}
	if newest && size <= fileHeaderSize {
		p.Kind = ProblemTorn
	}
	return 0, p, nil
}

// isTorn applies the torn-tail rules of spec section 7 to a bad record of
// the newest segment, whose LSN should have been lsn.
//
// A record that runs past the end of the file is torn only if no valid
// record follows it. A write torn by a crash leaves nothing whole after
// the record it tore. But a flipped bit in a length in the middle of the
// log also makes its record run past the end. Cutting there would drop
// every confirmed record after it, and hand their task ids out again. A
// whole record further on, with a later LSN and a good checksum, shows the
// length is corrupt. Then startup stops, as for any corruption.
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
	// Every record takes at least a header. This counts the LSNs that fit
	// after off.
	maxLSN := lsn + uint64(len(buf))/recordHeaderSize
	_, _, ok := findRecord(buf, 1, lsn, maxLSN)
	return ok, nil
}

// findRecord returns the first offset from pos on in buf where a whole
// record with a good checksum and an LSN in [lo, hi] starts, and its LSN.
func findRecord(buf []byte, pos int, lo, hi uint64) (int, uint64, bool) {
	for i := pos; i+recordHeaderSize <= len(buf); i++ {
		h := buf[i:]
		l := recordLSN(h)
		if l < lo || l > hi {
			continue
		}
		n := int64(binary.BigEndian.Uint32(h[0:4]))
		if n > int64(len(h)-recordHeaderSize) {
			continue
		}
		if recordCRC(h, h[recordHeaderSize:recordHeaderSize+n]) == binary.BigEndian.Uint32(h[4:8]) {
			return i, l, true
		}
	}
	return 0, 0, false
}

// resumed is where a segment's records resume after a corrupt one. It is
// the chain of records resync found.
type resumed struct {
	start   int64  // offset of its first record
	first   uint64 // that record's LSN
	last    uint64 // LSN of its last record
	end     int64  // offset just past its last record
	records int
	torn    *Problem // a torn tail from end on (newest segment only); nil: the chain runs to the end of the file
}

// resync looks for where the records of segment name resume after the
// corrupt record at off whose LSN should have been lsn. That is the first
// offset from off on holding a whole record with a good checksum and an
// LSN in [lsn, maxLSN]. From there, records with consecutive LSNs must run
// to the end of the file, or to a torn tail in the newest segment. A
// record in a corrupt one's place with a good checksum by chance rarely
// starts such a chain. Nor does one inside a payload. One that merges into
// the real chain before the end can hold only LSNs of the records it
// overlaps. If the chain found breaks at another corrupt record, the
// search goes on from that one, with the LSN it should have had. Its end
// is the end of the damage. It returns nil when no such chain exists. The
// error is for I/O failures.
//
// The rest of the file is read into memory, as validRecordAfter does. A
// segment is at most SegmentBytes plus one record.
func resync(f File, name string, off, size int64, lsn, maxLSN uint64, newest bool) (*resumed, error) {
	if off >= size {
		return nil, nil
	}
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, readErr(err)
	}
	pos := 0
	for lsn <= maxLSN {
		c, first, ok := findRecord(buf, pos, lsn, maxLSN)
		if !ok {
			return nil, nil
		}
		res := &resumed{start: off + int64(c), first: first, last: first - 1}
		rr := newRecordReader(bytes.NewReader(buf[c:]), 0, int64(len(buf)-c), first)
		for {
			l, _, err := rr.next()
			if err == io.EOF {
				res.end = size
				return res, nil
			}
			if err == nil {
				res.last = l
				res.records++
				continue
			}
			var re *recordError
			if !errors.As(err, &re) {
				return nil, err
			}
			// rr.next read the first record before, as findRecord checked
			// it. So re.off > 0, and the search moves on.
			bad := *re
			bad.off += res.start
			bad.end += res.start
			if newest {
				torn, err := isTorn(f, &bad, size, rr.expect)
				if err != nil {
					return nil, err
				}
				if torn {
					res.end = bad.off
					res.torn = &Problem{File: name, Offset: bad.off, Kind: ProblemTorn, Detail: bad.detail, Bytes: size - bad.off}
					return res, nil
				}
			}
			pos, lsn = c+int(re.off), rr.expect
			break
		}
	}
	return nil, nil
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
// It reads only the seg.size bytes from seg.start validated by Open.
func readSegment(fsys FS, dir string, seg segment, after uint64, fn func(lsn uint64, payload []byte) error) error {
	f, err := fsys.OpenFile(filepath.Join(dir, seg.name), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot open log segment %s: %w", seg.name, err)
	}
	defer f.Close()
	rr := newRecordReader(io.NewSectionReader(f, seg.start, seg.size), 0, seg.size, seg.first)
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
