package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Every file of the data dir starts with a format version.
// So a newer binary reads every format an older one wrote.
// And an older binary refuses, by name, a file it cannot read (spec section 7).
// A new file kind starts with a big-endian file header:
//
//	magic [8]byte | version uint32 | crc uint32
//
// crc is CRC32C over the magic and the version.
// Each magic's first byte is 0xff, to tell it from a headerless log segment.
// Such a segment was written before format versions.
// It starts with a record's length.
// No record of 4 GiB minus 16 MiB or more was ever written.
// So the two never meet.
const fileHeaderSize = 16

// Log segment format versions. 0 is the segment of older binaries.
// It has no header, and records start at the first byte.
const (
	segMagic   = "\xffA11LOG\x00"
	segVersion = 1
)

// ErrNewerFormat is matched by *FormatError.
var ErrNewerFormat = errors.New("file format newer than this binary reads")

// FormatError is a file a newer binary wrote, in a format this binary cannot read.
// Open refuses the data dir rather than skip the file.
// What it holds may be the only copy of confirmed changes.
type FormatError struct {
	File    string // file name in the data dir
	Version uint32 // the file's format version
	Known   uint32 // the newest format version of its kind this binary reads
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s has format version %d, and this binary reads up to version %d: a newer apollo11 wrote it; run that one (or newer) on this data dir",
		e.File, e.Version, e.Known)
}

// Unwrap makes errors.Is(err, ErrNewerFormat) true.
func (e *FormatError) Unwrap() error { return ErrNewerFormat }

// checkFormat returns a *FormatError when version is newer than known.
func checkFormat(file string, version, known uint32) error {
	if version > known {
		return &FormatError{File: file, Version: version, Known: known}
	}
	return nil
}

// appendFileHeader appends a file header with magic (8 bytes) and version.
func appendFileHeader(dst []byte, magic string, version uint32) []byte {
	if len(magic) != 8 {
		panic("snapshot: a file magic is 8 bytes")
	}
	n := len(dst)
	dst = append(dst, magic...)
	dst = binary.BigEndian.AppendUint32(dst, version)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[n:], castagnoli))
}

// headerState is what the start of a file says about its header.
type headerState int

const (
	headerNone    headerState = iota // does not start with the magic
	headerPartial                    // a strict prefix of a header, torn or cut short
	headerBad                        // the magic, but a checksum mismatch or version 0
	headerOK
)

// parseFileHeader reads the file header at the start of b.
// b holds the first fileHeaderSize bytes of file name, fewer when the file is shorter.
// With headerOK it returns the version.
// It also returns a *FormatError when that version is newer than known.
func parseFileHeader(name string, b []byte, magic string, known uint32) (headerState, uint32, error) {
	if len(b) < fileHeaderSize {
		if len(b) > 0 && bytes.HasPrefix([]byte(magic), b[:min(len(b), len(magic))]) {
			return headerPartial, 0, nil
		}
		return headerNone, 0, nil
	}
	if string(b[:len(magic)]) != magic {
		return headerNone, 0, nil
	}
	version := binary.BigEndian.Uint32(b[8:12])
	if crc32.Checksum(b[:12], castagnoli) != binary.BigEndian.Uint32(b[12:16]) || version == 0 {
		return headerBad, version, nil
	}
	return headerOK, version, checkFormat(name, version, known)
}
