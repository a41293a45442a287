package snapshot

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// snapFile is one snapshot file as the Store knows it.
type snapFile struct {
	name    string
	lsn     uint64
	size    int64
	entries uint64
	state   snapState
}

type snapState int

const (
	snapUnknown snapState = iota // not read yet
	snapValid
	snapInvalid
)

// dirList is the data dir sorted by kind; names are base names in LSN order.
type dirList struct {
	segments []string
	snaps    []*snapFile
	temps    []string
}

func listDir(fsys FS, dir string) (dirList, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return dirList{}, fmt.Errorf("cannot read data dir %s: %w", dir, err)
	}
	var l dirList
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, tmpSuffix) {
			l.temps = append(l.temps, name)
		} else if _, ok := parseSegName(name); ok {
			l.segments = append(l.segments, name)
		} else if lsn, ok := parseSnapName(name); ok {
			l.snaps = append(l.snaps, &snapFile{name: name, lsn: lsn})
		}
	}
	slices.Sort(l.segments)
	slices.Sort(l.temps)
	slices.SortFunc(l.snaps, func(a, b *snapFile) int { return strings.Compare(a.name, b.name) })
	return l, nil
}

// recovery is what Open found in the data dir and what it decided.
type recovery struct {
	opts      Options
	log       *slog.Logger
	segs      []*segment
	snaps     []*snapFile
	base      *snapFile // snapshot Replay loads; nil: replay the log from LSN 1
	lastLSN   uint64
	problems  []Problem
	replayErr error // the records Replay needs are missing
	// lost bounds from above how many confirmed records RecoverTruncate
	// dropped, at this Open and earlier ones not yet made up for (see
	// Store.Lost).
	lost    uint64
	changed bool // files were cut or removed: fsync the directory
}

func (r *recovery) path(name string) string { return filepath.Join(r.opts.Dir, name) }

// sweep removes leftover temporary files (unless ReadOnly).
func (r *recovery) sweep(temps []string) {
	for _, name := range temps {
		if r.opts.ReadOnly {
			r.log.Warn("leftover temporary file (read-only: kept)", "file", name)
			continue
		}
		if err := r.opts.FS.Remove(r.path(name)); err != nil {
			r.log.Warn("cannot remove leftover temporary file", "file", name, "err", err)
			continue
		}
		r.log.Warn("removed leftover temporary file", "file", name)
	}
}

// recordsIn bounds from above the records in a cut segment's dropped
// bytes and in whole dropped segments: no record is shorter than its
// header. A segment whose size cannot be read counts as the largest a
// segment may grow to.
func (r *recovery) recordsIn(cutBytes int64, dropped []string) uint64 {
	bytes := uint64(max(cutBytes, 0))
	sizes := map[string]int64{}
	if entries, err := r.opts.FS.ReadDir(r.opts.Dir); err == nil {
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				sizes[e.Name()] = info.Size()
			}
		}
	}
	for _, d := range dropped {
		size, ok := sizes[d]
		if !ok {
			size = max(r.opts.SegmentBytes, 0) + recordHeaderSize + MaxPayload
		}
		bytes += uint64(size)
	}
	return bytes/recordHeaderSize + 1
}

// recoverLog scans every segment and applies the rules of spec section 7:
// a torn tail of the newest segment is cut off with a warning; any other
// bad record is an error, or with RecoverTruncate the log is cut there.
func (r *recovery) recoverLog(names []string) error {
	for i, name := range names {
		first, _ := parseSegName(name)
		seg, p, err := scanSegment(r.opts.FS, r.opts.Dir, name, first, i == len(names)-1)
		if err != nil {
			return fmt.Errorf("cannot open log segment %s: %w", name, err)
		}
		if n := len(r.segs); n > 0 && first != r.segs[n-1].last+1 {
			prev := r.segs[n-1]
			p = &Problem{File: name, Kind: ProblemCorrupt, Bytes: seg.fileSize,
				Detail: fmt.Sprintf("segment starts at LSN %d but %s ends at LSN %d", first, prev.name, prev.last)}
			seg = segment{name: name, first: first, last: first - 1, fileSize: seg.fileSize}
		}
		if p == nil {
			r.segs = append(r.segs, &seg)
			continue
		}
		r.problems = append(r.problems, *p)
		if p.Kind == ProblemTorn {
			r.log.Warn("cutting torn tail of the newest log segment", "file", name,
				"offset", p.Offset, "bytes", p.Bytes, "reason", p.Detail)
			if err := r.cut(name, p.Offset); err != nil {
				return err
			}
			r.segs = append(r.segs, &seg)
			continue
		}
		if !r.opts.RecoverTruncate {
			return &CorruptError{File: name, Offset: p.Offset, Reason: p.Detail}
		}
		dropped := names[i+1:]
		if err := r.addLost(r.recordsIn(p.Bytes, dropped)); err != nil {
			return err
		}
		r.log.Error("LOG CORRUPTION: RecoverTruncate cuts the log here; every later record is LOST",
			"file", name, "offset", p.Offset, "reason", p.Detail, "dropped_bytes", p.Bytes,
			"dropped_segments", dropped, "last_kept_lsn", seg.last)
		if p.Offset == 0 {
			err = r.remove(name)
		} else {
			err = r.cut(name, p.Offset)
			r.segs = append(r.segs, &seg)
		}
		if err != nil {
			return err
		}
		for _, d := range dropped {
			if err := r.remove(d); err != nil {
				return err
			}
		}
		break
	}
	return nil
}

// cut truncates a segment at off and fsyncs it (unless ReadOnly).
func (r *recovery) cut(name string, off int64) error {
	if r.opts.ReadOnly {
		return nil
	}
	f, err := r.opts.FS.OpenFile(r.path(name), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("cannot open log segment %s: %w", name, err)
	}
	err = f.Truncate(off)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot truncate log segment %s at offset %d: %w", name, off, err)
	}
	r.changed = true
	return nil
}

func (r *recovery) remove(name string) error {
	if r.opts.ReadOnly {
		return nil
	}
	if err := r.opts.FS.Remove(r.path(name)); err != nil {
		return fmt.Errorf("cannot remove log segment %s: %w", name, err)
	}
	r.changed = true
	return nil
}

// chooseSnapshot validates snapshots from the newest down and picks the
// first valid one as the base.
func (r *recovery) chooseSnapshot() {
	for i := len(r.snaps) - 1; i >= 0; i-- {
		sf := r.snaps[i]
		entries, size, err := walkSnapshot(r.opts.FS, r.path(sf.name), sf.lsn, nil)
		sf.size, sf.entries = size, entries
		if err != nil {
			sf.state = snapInvalid
			r.log.Warn("snapshot is invalid; falling back to the previous one", "file", sf.name, "err", err)
			continue
		}
		sf.state = snapValid
		r.base = sf
		return
	}
}

// checkCoverage checks that the log holds every record after the base
// snapshot and sets lastLSN. A log that ends before a valid base snapshot
// (possible only after a power loss with FsyncNever) is wholly covered by
// it: its segments are removed so that the next record starts a new one.
func (r *recovery) checkCoverage() error {
	var base, newest uint64
	from := "no valid snapshot"
	if r.base != nil {
		base, from = r.base.lsn, r.base.name
	}
	if n := len(r.snaps); n > 0 {
		newest = r.snaps[n-1].lsn
	}
	missing := func(lo, hi uint64, why string) {
		r.replayErr = fmt.Errorf("%w: records %d..%d: %s", ErrMissingLog, lo, hi, why)
	}
	if len(r.segs) == 0 {
		r.lastLSN = base
		if newest > base {
			missing(base+1, newest, fmt.Sprintf("snapshot %s is invalid, %s is loaded and there is no log", r.snaps[len(r.snaps)-1].name, from))
		}
		return nil
	}
	first, lastSeg := r.segs[0], r.segs[len(r.segs)-1]
	r.lastLSN = lastSeg.last
	switch {
	case first.first > base+1:
		missing(base+1, first.first-1, fmt.Sprintf("replay starts from %s and the log starts at %s", from, first.name))
	case lastSeg.last < base:
		r.log.Warn("the log ends before the snapshot (records lost from the OS cache?); removing it",
			"snapshot", from, "log_last_lsn", lastSeg.last)
		for _, seg := range r.segs {
			if err := r.remove(seg.name); err != nil {
				return err
			}
		}
		r.segs, r.lastLSN = nil, base
	case lastSeg.last < newest && newest > base:
		why := fmt.Sprintf("invalid snapshot %s was the only copy; the log ends at %s", r.snaps[len(r.snaps)-1].name, lastSeg.name)
		if !r.opts.RecoverTruncate {
			missing(lastSeg.last+1, newest, why)
			break
		}
		r.log.Error("RecoverTruncate: confirmed records are LOST", "first_lsn", lastSeg.last+1, "last_lsn", newest, "why", why)
		if err := r.addLost(newest - lastSeg.last); err != nil {
			return err
		}
	}
	return nil
}
