package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
)

// The framing of the log, shared with the other logs of the project.
// cluster/logstore keeps raft's log in files framed this way.
// So the record layout, its checksum, the file header and the torn-tail
// rules have one definition.

// RecordHeaderSize is the size of a record's header (see appendRecord).
const RecordHeaderSize = recordHeaderSize

// FileHeaderSize is the size of a file header (see format.go).
const FileHeaderSize = fileHeaderSize

// LogFormat names a kind of log file by its file header.
type LogFormat struct {
	Magic   string // 8 bytes, the first one 0xff
	Version uint32 // the newest format version this binary reads and writes
}

// AppendFileHeader appends the file header of lf.
func AppendFileHeader(dst []byte, lf LogFormat) []byte {
	return appendFileHeader(dst, lf.Magic, lf.Version)
}

// AppendRecord appends one record, numbered lsn, holding payload.
// The payload must be at most MaxPayload bytes.
func AppendRecord(dst []byte, lsn uint64, payload []byte) []byte {
	return appendRecord(dst, lsn, payload)
}

// ErrBadRecord is returned by DecodeRecord for a record that fails its checks.
var ErrBadRecord = errors.New("bad record")

// DecodeRecord decodes the one record buf holds, which must be numbered lsn.
// The payload aliases buf.
func DecodeRecord(buf []byte, lsn uint64) ([]byte, error) {
	if len(buf) < recordHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a record header", ErrBadRecord, len(buf))
	}
	n := int(binary.BigEndian.Uint32(buf[0:4]))
	if n != len(buf)-recordHeaderSize {
		return nil, fmt.Errorf("%w: length %d, %d bytes follow the header", ErrBadRecord, n, len(buf)-recordHeaderSize)
	}
	payload := buf[recordHeaderSize:]
	if recordCRC(buf, payload) != binary.BigEndian.Uint32(buf[4:8]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadRecord)
	}
	if got := recordLSN(buf); got != lsn {
		return nil, fmt.Errorf("%w: LSN %d, expected %d", ErrBadRecord, got, lsn)
	}
	return payload, nil
}

// CheckFileHeader checks that b starts with the file header of lf.
// name is the file's, for the errors. A newer version is a *FormatError.
func CheckFileHeader(name string, b []byte, lf LogFormat) error {
	state, version, err := parseFileHeader(name, b[:min(len(b), fileHeaderSize)], lf.Magic, lf.Version)
	switch {
	case err != nil:
		return err
	case state == headerOK:
		return nil
	case state == headerBad:
		return fmt.Errorf("%s: bad file header (checksum mismatch or version %d)", name, version)
	}
	return fmt.Errorf("%s: no file header", name)
}

// LogScan is what ScanLog found in one log file.
type LogScan struct {
	Start   int64    // offset of the first record, past the file header
	End     int64    // offset just past the last whole record
	Last    uint64   // LSN of the last whole record; the first's minus 1 when none
	Records int      // whole records
	Problem *Problem // the first bad record or header; nil when none
}

// ScanLog checks a log file of format lf, as Open checks a segment.
// f is the file name, of size bytes, whose first record is numbered first.
// It calls fn, when not nil, for each whole record with its offset.
// The payload is valid only during the call.
// It stops at the first bad record or header, its Problem.
// In the newest file a torn write is ProblemTorn: the caller cuts it at
// Problem.Offset. Anything else is ProblemCorrupt.
// A header of a newer format is a *FormatError. Other errors are I/O failures.
func ScanLog(f File, name string, size int64, lf LogFormat, first uint64, newest bool, fn func(lsn uint64, off int64, payload []byte)) (LogScan, error) {
	hdr, p, err := readLogHeader(f, name, size, newest, lf, false)
	if err != nil || p != nil {
		return LogScan{Last: first - 1, Problem: p}, err
	}
	return scanRecords(f, name, hdr, size, first, newest, fn)
}

// WriteFileAtomic writes a file that appears whole or not at all.
// It goes through a temporary file beside it (renameio), then the
// directory is fsynced. A leftover temporary file is named
// "."+base(path)+digits.
func WriteFileAtomic(fsys FS, path string, data []byte) error {
	a, err := createAtomic(fsys, path)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", filepath.Base(path), err)
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return fmt.Errorf("cannot write %s: %w", filepath.Base(path), err)
	}
	return a.Commit()
}

// LockDir takes the exclusive flocks of a data dir, as Open does.
// A second process opening dir fails with ErrLocked until Close.
func LockDir(dir string, log *slog.Logger) (io.Closer, error) {
	l, err := lockDir(dir, log)
	if err != nil {
		return nil, err
	}
	return l, nil
}
