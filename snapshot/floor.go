package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
)

// floorAttempts bounds the listings LastWritten makes of a dir whose
// newest segment a live server keeps removing.
const floorAttempts = 5

// LastWritten is the LSN of the last whole record in opts.Dir's newest
// log segment, or the newest snapshot's LSN when that is higher or there
// is no log. A server may run on the dir: every record it confirmed
// before the call is at or below it. A copy of the dir that recovers to
// a lower LSN lost a confirmed record. Only the newest segment is read.
func LastWritten(opts Options) (uint64, error) {
	o := opts.withDefaults()
	var last error
	for range floorAttempts {
		l, err := listDir(o.FS, o.Dir)
		if err != nil {
			return 0, err
		}
		var lsn uint64
		if n := len(l.snaps); n > 0 {
			lsn = l.snaps[n-1].lsn
		}
		if n := len(l.segments); n > 0 {
			name := l.segments[n-1]
			first, _ := parseSegName(name)
			seg, _, err := scanSegment(o.FS, o.Dir, name, first, true)
			if errors.Is(err, fs.ErrNotExist) {
				// Dropped after a newer snapshot since the listing.
				last = err
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("cannot read log segment %s: %w", name, err)
			}
			lsn = max(lsn, seg.last)
		}
		return lsn, nil
	}
	return 0, fmt.Errorf("the newest log segment kept disappearing: %w", last)
}
