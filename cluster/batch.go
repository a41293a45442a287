package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A batch is one Raft entry: every change record the leader made while
// the entry before was being committed. Layout:
//
//	version byte (1) | origin id (uvarint length, bytes) | origin term (uvarint)
//	last LSN (uvarint) | record count (uvarint) | records (uvarint length, bytes)
//
// The origin says which leadership made the records. That leader applied
// them when it made them, so it skips them as it applies the log.
const batchVersion = 1

// Origin names a leadership: a member's id and the Raft term it led.
type Origin struct {
	ID   string
	Term uint64
}

// Batch is a decoded entry. Its records borrow from the entry's bytes.
type Batch struct {
	Origin  Origin
	LastLSN uint64 // the proposer's number of the batch's last record
	Records [][]byte
}

// errBadBatch wraps every entry that does not decode.
var errBadBatch = errors.New("cluster: bad batch entry")

func appendBatchHeader(dst []byte, o Origin, lastLSN uint64, count int) []byte {
	dst = append(dst, batchVersion)
	dst = binary.AppendUvarint(dst, uint64(len(o.ID)))
	dst = append(dst, o.ID...)
	dst = binary.AppendUvarint(dst, o.Term)
	dst = binary.AppendUvarint(dst, lastLSN)
	return binary.AppendUvarint(dst, uint64(count))
}

// EncodeBatch encodes records as one entry. Tests and tools use it; the
// proposer builds its entries in place.
func EncodeBatch(o Origin, lastLSN uint64, records [][]byte) []byte {
	b := appendBatchHeader(nil, o, lastLSN, len(records))
	for _, r := range records {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return b
}

// DecodeBatch decodes an entry. The records borrow from data.
func DecodeBatch(data []byte) (Batch, error) {
	var b Batch
	if len(data) == 0 || data[0] != batchVersion {
		return b, fmt.Errorf("%w: version byte", errBadBatch)
	}
	p := data[1:]
	next := func(what string) (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, fmt.Errorf("%w: %s", errBadBatch, what)
		}
		p = p[n:]
		return v, nil
	}
	idLen, err := next("origin id length")
	if err != nil {
		return b, err
	}
	if idLen > uint64(len(p)) {
		return b, fmt.Errorf("%w: origin id runs past the entry", errBadBatch)
	}
	b.Origin.ID, p = string(p[:idLen]), p[idLen:]
	if b.Origin.Term, err = next("origin term"); err != nil {
		return b, err
	}
	if b.LastLSN, err = next("last LSN"); err != nil {
		return b, err
	}
	count, err := next("record count")
	if err != nil {
		return b, err
	}
	if count > uint64(len(p)) { // each record takes a length byte at least
		return b, fmt.Errorf("%w: %d records in %d bytes", errBadBatch, count, len(p))
	}
	b.Records = make([][]byte, 0, count)
	for i := range count {
		n, err := next("record length")
		if err != nil {
			return b, err
		}
		if n > uint64(len(p)) {
			return b, fmt.Errorf("%w: record %d runs past the entry", errBadBatch, i)
		}
		b.Records, p = append(b.Records, p[:n:n]), p[n:]
	}
	if len(p) != 0 {
		return b, fmt.Errorf("%w: %d bytes after the last record", errBadBatch, len(p))
	}
	return b, nil
}
