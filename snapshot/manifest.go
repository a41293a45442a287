package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// A manifest is snapshot-<lsn> in format version 2 or 3.
// It has the framing of a whole snapshot (snapfile.go).
// Its first entry is the index below.
// Its other entries are the caller's head entries, small state kept whole in every snapshot.
// The index lists the parts the snapshot uses.
// Per key range it gives the LSN of the part holding its base.
// Entries of that range in older parts are void.
//
//	index: uvarint rangeBits
//	       uvarint parts, then per part:
//	           kind byte | uvarint lsn | uvarint size | uvarint entries | crc uint32
//	       uvarint ranges, then per range, ascending:
//	           uvarint range minus the previous one | uvarint base LSN |
//	           uvarint floor (0: none; else the range's lowest key left,
//	           minus the range's first key, plus 1)
//
// Version 3 has the same layout. It may list runs parts (keys from
// RunKeys up), which a version 2 reader would take for a malformed index.
const (
	manifestV2      = 2 // the first manifest version
	manifestVersion = 3
)

// isManifest reports whether a snapshot file of this version is a manifest.
func isManifest(version uint32) bool { return version >= manifestV2 }

// partRef is a part as a manifest lists it.
type partRef struct {
	kind    byte
	lsn     uint64
	size    int64
	entries uint64
	crc     uint32
}

func (p partRef) name() string { return partName(p.lsn, p.kind) }

// rangeRec says that range r's entries in parts older than base are void.
// So are those of keys below floor, all gone. A floor of 0 means none.
type rangeRec struct{ r, base, floor uint64 }

type manifestIndex struct {
	rangeBits uint
	parts     []partRef // ascending by LSN; state parts too
	ranges    []rangeRec
}

func (m *manifestIndex) encode() []byte {
	b := binary.AppendUvarint(nil, uint64(m.rangeBits))
	b = binary.AppendUvarint(b, uint64(len(m.parts)))
	for _, p := range m.parts {
		b = append(b, p.kind)
		b = binary.AppendUvarint(b, p.lsn)
		b = binary.AppendUvarint(b, uint64(p.size))
		b = binary.AppendUvarint(b, p.entries)
		b = binary.BigEndian.AppendUint32(b, p.crc)
	}
	b = binary.AppendUvarint(b, uint64(len(m.ranges)))
	var prev uint64
	for _, r := range m.ranges {
		b = binary.AppendUvarint(b, r.r-prev)
		b = binary.AppendUvarint(b, r.base)
		var off uint64
		if r.floor > 0 {
			off = r.floor - r.r<<m.rangeBits + 1
		}
		b = binary.AppendUvarint(b, off)
		prev = r.r
	}
	return b
}

var errBadIndex = errors.New("malformed manifest index")

// decodeIndex decodes the index of a manifest of the given format version.
func decodeIndex(b []byte, version uint32, lsn uint64) (*manifestIndex, error) {
	m := &manifestIndex{}
	uv := func() uint64 {
		if b == nil {
			return 0
		}
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	bits := uv()
	if bits > 63 {
		return nil, fmt.Errorf("%w: range bits %d", errBadIndex, bits)
	}
	m.rangeBits = uint(bits)
	n := uv()
	if b == nil || n > uint64(len(b)) { // a part takes several bytes
		return nil, errBadIndex
	}
	for range n {
		if len(b) < 1 {
			return nil, errBadIndex
		}
		p := partRef{kind: b[0]}
		b = b[1:]
		p.lsn, p.size, p.entries = uv(), int64(uv()), uv()
		if b == nil || len(b) < 4 || p.size < 0 {
			return nil, errBadIndex
		}
		p.crc = binary.BigEndian.Uint32(b)
		b = b[4:]
		if !keyedPart(p.kind) && p.kind != partState || p.lsn > lsn {
			return nil, fmt.Errorf("%w: part %s", errBadIndex, p.name())
		}
		if p.kind == partRuns && version < manifestVersion {
			return nil, fmt.Errorf("%w: format %d lists runs part %s, which only format %d has", errBadIndex, version, p.name(), manifestVersion)
		}
		if k := len(m.parts); k > 0 && m.parts[k-1].lsn > p.lsn {
			return nil, fmt.Errorf("%w: parts out of order", errBadIndex)
		}
		m.parts = append(m.parts, p)
	}
	n = uv()
	if b == nil || n > uint64(len(b)) {
		return nil, errBadIndex
	}
	var prev uint64
	for i := range n {
		d, base, off := uv(), uv(), uv()
		if b == nil || (i > 0 && d == 0) || base > lsn || off > 1<<m.rangeBits {
			return nil, errBadIndex
		}
		prev += d
		rr := rangeRec{r: prev, base: base}
		if off > 0 {
			rr.floor = prev<<m.rangeBits + off - 1
		}
		m.ranges = append(m.ranges, rr)
	}
	if b == nil || len(b) != 0 {
		return nil, errBadIndex
	}
	return m, nil
}

// rangeOf returns the record of range r. A zero record means every entry counts.
func (m *manifestIndex) rangeOf(r uint64) rangeRec {
	i, ok := slices.BinarySearchFunc(m.ranges, r, func(x rangeRec, r uint64) int {
		switch {
		case x.r < r:
			return -1
		case x.r > r:
			return 1
		}
		return 0
	})
	if !ok {
		return rangeRec{r: r}
	}
	return m.ranges[i]
}

// readManifest reads snapshot file name.
// It returns its format version and, for a manifest, its index.
// head, if not nil, gets the head entries, or every entry of a whole snapshot.
// Errors about the content wrap ErrBadSnapshot.
func readManifest(fsys FS, path string, lsn uint64, head func(p []byte) error) (version uint32, idx *manifestIndex, entries uint64, size int64, err error) {
	first := true
	version, entries, size, err = walkSnap(fsys, path, lsn, func(v uint32, p []byte) error {
		if first && isManifest(v) {
			first = false
			var ierr error
			if idx, ierr = decodeIndex(p, v, lsn); ierr != nil {
				return fmt.Errorf("%w: %s: %w", ErrBadSnapshot, filepath.Base(path), ierr)
			}
			return nil
		}
		if head == nil {
			return nil
		}
		return head(p)
	})
	if err == nil && isManifest(version) && idx == nil {
		err = fmt.Errorf("%w: manifest without an index", ErrBadSnapshot)
	}
	return version, idx, entries, size, err
}
