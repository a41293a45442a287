package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Log record layout, all big-endian:
//
//	len uint32 | crc uint32 | lsn uint64 | payload (len bytes)
//
// crc is CRC32C over the len bytes, the lsn bytes and the payload.
// So the checksum covers the length too (spec section 7).
const recordHeaderSize = 16

// MaxPayload is the largest payload a record or snapshot entry can hold.
const MaxPayload = 1<<32 - 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord encodes one record onto dst.
func appendRecord(dst []byte, lsn uint64, payload []byte) []byte {
	if uint64(len(payload)) > MaxPayload {
		panic("snapshot: payload larger than MaxPayload")
	}
	n := len(dst)
	dst = slices.Grow(dst, recordHeaderSize+len(payload))
	dst = dst[:n+recordHeaderSize]
	h := dst[n:]
	binary.BigEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint64(h[8:16], lsn)
	binary.BigEndian.PutUint32(h[4:8], recordCRC(h, payload))
	return append(dst, payload...)
}

// recordCRC computes the checksum of a record from its header and payload.
// It ignores the crc field of the header.
func recordCRC(hdr, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, hdr[0:4])
	c = crc32.Update(c, castagnoli, hdr[8:16])
	return crc32.Update(c, castagnoli, payload)
}

// recordLSN returns the LSN of the record encoded at the start of buf.
func recordLSN(buf []byte) uint64 { return binary.BigEndian.Uint64(buf[8:16]) }

// chunk returns how many bytes of whole records from the start of buf fit
// in room bytes. It also returns how many records that is and the last LSN.
// If atLeastOne, the first record is taken even if it is larger than room.
// That way an oversized record gets a segment of its own.
func chunk(buf []byte, room int64, atLeastOne bool) (n, records int, last uint64) {
	for n < len(buf) {
		sz := recordHeaderSize + int(binary.BigEndian.Uint32(buf[n:]))
		if int64(n+sz) > room && !(atLeastOne && n == 0) {
			break
		}
		last = recordLSN(buf[n:])
		n += sz
		records++
	}
	return n, records, last
}

// Segment and snapshot file names carry an LSN as 20 zero-padded digits.
// That way names sort in LSN order.
const (
	segSuffix  = ".log"
	snapPrefix = "snapshot-"
	tmpSuffix  = ".tmp"
	lsnDigits  = 20
)

func joinDir(dir, name string) string { return filepath.Join(dir, name) }

func segName(first uint64) string { return fmt.Sprintf("%020d%s", first, segSuffix) }
func snapName(lsn uint64) string  { return fmt.Sprintf("%s%020d", snapPrefix, lsn) }

// parseSegName parses a segment name. LSNs start at 1,
// so a segment named 0 is not one of ours.
func parseSegName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, segSuffix)
	if !ok {
		return 0, false
	}
	lsn, ok := parseLSN(s)
	return lsn, ok && lsn > 0
}

func parseSnapName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, snapPrefix)
	if !ok {
		return 0, false
	}
	return parseLSN(s)
}

func parseLSN(s string) (uint64, bool) {
	if len(s) != lsnDigits || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// recordErrKind classifies a record that cannot be decoded.
type recordErrKind int

const (
	errPastEnd  recordErrKind = iota // header or payload runs past the end of the file
	errChecksum                      // checksum mismatch
	errBadLSN                        // valid checksum, LSN out of sequence
)

// recordError is a record that cannot be decoded at off.
type recordError struct {
	off    int64
	end    int64 // off + the record length its header announces
	kind   recordErrKind
	detail string
}

func (e *recordError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.detail) }

// recordReader decodes the records of one segment in order.
// It checks checksums and that LSNs run on from the first one expected.
type recordReader struct {
	r      *bufio.Reader
	off    int64 // offset of the next record
	size   int64 // bytes of the file to read
	expect uint64
	hdr    [recordHeaderSize]byte
	buf    []byte
}

// newRecordReader reads records from r, at offset off of a file of size bytes.
// Offsets in errors are the file's.
func newRecordReader(r io.Reader, off, size int64, first uint64) *recordReader {
	return &recordReader{r: bufio.NewReaderSize(r, 1<<20), off: off, size: size, expect: first}
}

// next returns the next record. The payload is valid until the next call.
// It returns io.EOF at the end and a *recordError for a bad record.
// Otherwise it may return an I/O error.
func (rr *recordReader) next() (uint64, []byte, error) {
	rem := rr.size - rr.off
	if rem == 0 {
		return 0, nil, io.EOF
	}
	if rem < recordHeaderSize {
		return 0, nil, &recordError{off: rr.off, end: rr.off + recordHeaderSize, kind: errPastEnd,
			detail: fmt.Sprintf("incomplete record header (%d bytes)", rem)}
	}
	if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
		return 0, nil, readErr(err)
	}
	n := int64(binary.BigEndian.Uint32(rr.hdr[0:4]))
	end := rr.off + recordHeaderSize + n
	if end > rr.size {
		return 0, nil, &recordError{off: rr.off, end: end, kind: errPastEnd,
			detail: fmt.Sprintf("record of %d bytes runs past the end of the file", n)}
	}
	rr.buf = slices.Grow(rr.buf[:0], int(n))[:n]
	if _, err := io.ReadFull(rr.r, rr.buf); err != nil {
		return 0, nil, readErr(err)
	}
	if got, want := binary.BigEndian.Uint32(rr.hdr[4:8]), recordCRC(rr.hdr[:], rr.buf); got != want {
		return 0, nil, &recordError{off: rr.off, end: end, kind: errChecksum, detail: "checksum mismatch"}
	}
	lsn := binary.BigEndian.Uint64(rr.hdr[8:16])
	if lsn != rr.expect {
		return 0, nil, &recordError{off: rr.off, end: end, kind: errBadLSN,
			detail: fmt.Sprintf("record has LSN %d, expected %d", lsn, rr.expect)}
	}
	rr.off = end
	rr.expect++
	return lsn, rr.buf, nil
}

// readErr turns a short read of a file whose size was checked into an error.
// Such a read means the file shrank under us.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("file shrank while reading: %w", io.ErrUnexpectedEOF)
	}
	return err
}
