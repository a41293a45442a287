package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// A raft entry's payload, big-endian:
//
//	term uint64 | type uint8 | appended_at int64 | data_len uint32 | data | extensions
//
// appended_at is Unix nanoseconds, 0 for the zero time.
// extensions run to the end of the payload.
const entryHeaderSize = 8 + 1 + 8 + 4

// errBadEntry is a payload that is not a raft entry.
var errBadEntry = errors.New("bad raft entry")

// appendEntry appends l's payload to dst.
func appendEntry(dst []byte, l *raft.Log) []byte {
	dst = binary.BigEndian.AppendUint64(dst, l.Term)
	dst = append(dst, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(at))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(l.Data)))
	dst = append(dst, l.Data...)
	return append(dst, l.Extensions...)
}

// entrySize is the size of l's payload.
func entrySize(l *raft.Log) int { return entryHeaderSize + len(l.Data) + len(l.Extensions) }

// decodeEntry fills l from payload. Data and Extensions alias payload.
func decodeEntry(payload []byte, index uint64, l *raft.Log) error {
	if len(payload) < entryHeaderSize {
		return fmt.Errorf("%w at index %d: %d bytes", errBadEntry, index, len(payload))
	}
	n := int(binary.BigEndian.Uint32(payload[17:21]))
	if n > len(payload)-entryHeaderSize {
		return fmt.Errorf("%w at index %d: data of %d bytes in %d", errBadEntry, index, n, len(payload))
	}
	*l = raft.Log{
		Index: index,
		Term:  binary.BigEndian.Uint64(payload[0:8]),
		Type:  raft.LogType(payload[8]),
	}
	if at := int64(binary.BigEndian.Uint64(payload[9:17])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	if n > 0 {
		l.Data = payload[entryHeaderSize : entryHeaderSize+n : entryHeaderSize+n]
	}
	if ext := payload[entryHeaderSize+n:]; len(ext) > 0 {
		l.Extensions = ext
	}
	return nil
}
