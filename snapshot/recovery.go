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
	version uint32   // 1: whole; 2: a manifest (manifest.go)
	parts   []string // the parts a manifest uses
}

type snapState int

const (
	snapUnknown snapState = iota // not read yet
	snapValid
	snapInvalid
)

// dirList is the data dir sorted by kind. Names are base names in LSN order.
type dirList struct {
	segments []string
	snaps    []*snapFile
	parts    []string // parts of incremental snapshots (part.go)
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
		if isTempName(name) {
			l.temps = append(l.temps, name)
		} else if _, ok := parseSegName(name); ok {
			l.segments = append(l.segments, name)
		} else if lsn, ok := parseSnapName(name); ok {
			l.snaps = append(l.snaps, &snapFile{name: name, lsn: lsn})
		} else if _, _, ok := parsePartName(name); ok {
			l.parts = append(l.parts, name)
		}
	}
	slices.Sort(l.segments)
	slices.Sort(l.temps)
	slices.SortFunc(l.snaps, func(a, b *snapFile) int { return strings.Compare(a.name, b.name) })
	return l, nil
}

// isTempName reports whether name is a temporary file a crash may have
// left. renameio names them ".<target><random digits>" (see atomicFile).
// An older binary named them "<target>.tmp". Other dot files are not
// ours, such as an operator's or NFS's ".nfs<digits>". So the target must
// be a name we write.
func isTempName(name string) bool {
	if strings.HasSuffix(name, tmpSuffix) {
		return true
	}
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	// Targets may end in digits too, so try every split before the suffix.
	for i := len(strings.TrimRight(rest, "0123456789")); i < len(rest); i++ {
		if isStoreName(rest[:i]) {
			return true
		}
	}
	return false
}

// isStoreName reports whether name is one the store writes with createAtomic.
func isStoreName(name string) bool {
	if _, ok := parseSegName(name); ok {
		return true
	}
	if _, ok := parseSnapName(name); ok {
		return true
	}
	if _, _, ok := parsePartName(name); ok {
		return true
	}
	return name == lostName
}

// recovery is what Open found in the data dir and what it decided.
type recovery struct {
	opts      Options
	log       *slog.Logger
	segs      []*segment
	snaps     []*snapFile
	base      *snapFile // snapshot Replay loads; nil: replay the log from LSN 1
	baseIdx   *manifestIndex
	incr      *incrState // base's structure when it is a manifest
	lastLSN   uint64
	problems  []Problem
	replayErr error // the records Replay needs are missing
	// lost bounds from above how many confirmed records RecoverTruncate
	// dropped. It counts this Open and earlier ones not yet made up for
	// (see Store.Lost).
	lost    uint64
	changed bool // files were cut or removed: fsync the directory
	// foreign is a segment planBridge found named inside a damaged
	// segment's records but holding other bytes. It is never the log's head.
	foreign string
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
// bytes and in whole dropped segments. No record is shorter than its
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

// recoverLog scans every segment and applies the rules of spec section 7.
// A torn tail of the newest segment is cut off with a warning. Any other
// bad record, or a missing segment, is an error. With RecoverTruncate the
// log is bridged there instead, when the base snapshot holds every record
// that the bridge loses (see bridge and dropCovered). Otherwise it is cut
// there.
func (r *recovery) recoverLog(names []string) error {
	for i := 0; i < len(names); i++ {
		name := names[i]
		first, _ := parseSegName(name)
		seg, p, err := scanSegment(r.opts.FS, r.opts.Dir, name, first, i == len(names)-1)
		if err != nil {
			return fmt.Errorf("cannot open log segment %s: %w", name, err)
		}
		gap := false
		if n := len(r.segs); n > 0 && first != r.segs[n-1].last+1 {
			prev := r.segs[n-1]
			p = &Problem{File: name, Kind: ProblemCorrupt, Bytes: seg.fileSize,
				Detail: fmt.Sprintf("segment starts at LSN %d but %s ends at LSN %d", first, prev.name, prev.last)}
			seg = segment{name: name, first: first, last: first - 1, fileSize: seg.fileSize}
			gap = true
		}
		if p == nil {
			r.segs = append(r.segs, &seg)
			continue
		}
		if p.Kind != ProblemTorn && r.opts.RecoverTruncate {
			next, skipped, err := r.skipWithoutLoss(names, i, &seg, p, gap)
			if err != nil {
				return err
			}
			if skipped {
				i = next
				continue
			}
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

// skipWithoutLoss tries, for RecoverTruncate, the ways past the bad
// record p of segment names[i] that lose no record Replay needs. With
// gap, it tries the ways past the segments missing before names[i]. It
// tries, in turn, cutting bad bytes that hold no record, bridging the
// damage (bridge), and dropping the segments before the next whole one
// (dropCovered). It reports whether one applied. It also returns the
// index of the last segment it dealt with. The scan goes on after it.
func (r *recovery) skipWithoutLoss(names []string, i int, seg *segment, p *Problem, gap bool) (int, bool, error) {
	later := names[i+1:]
	newest := len(later) == 0
	if gap {
		dropped, err := r.dropCovered(seg, p, true, later)
		return i - 1, dropped, err // names[i] is whole: scan it again, now at the head of the log
	}
	if !newest && seg.last+1 == firstLSN(later[0]) {
		// The next segment holds the record that would follow. So the bad
		// bytes hold none, as a segment is started only after the one
		// before it is complete. They are cut, as a torn tail is, and
		// nothing is lost.
		r.problems = append(r.problems, *p)
		r.log.Error("LOG CORRUPTION: RecoverTruncate cuts bytes after the last record of a segment; the next segment continues the log, nothing is lost",
			"file", seg.name, "offset", p.Offset, "reason", p.Detail, "bytes", p.Bytes, "last_lsn", seg.last, "next_segment", later[0])
		if err := r.cut(seg.name, p.Offset); err != nil {
			return i, false, err
		}
		r.segs = append(r.segs, seg)
		return i, true, nil
	}
	b, err := r.planBridge(seg, p, later, newest)
	if err != nil {
		return i, false, err
	}
	if b != nil {
		if b.leftover {
			i++ // the file bridge rewrites, left by an interrupted bridge
		}
		return i, true, r.bridge(b)
	}
	dropped, err := r.dropCovered(seg, p, false, later)
	return i, dropped, err
}

// firstLSN is the LSN a segment's name says its first record has.
func firstLSN(name string) uint64 {
	lsn, _ := parseSegName(name)
	return lsn
}

// dropCovered gets past what bridge cannot. That is damage after which
// nothing whole resumes in the segment, such as a zeroed or garbled end
// or a whole segment zeroed. It is also damage after which the segment
// resumes but the next segment does not continue it. And it is a segment
// missing between two others. The base snapshot may hold every record
// from the first one lost up to where the next whole segment starts. Then
// the segments before that one are removed, and the log starts with it.
// Nothing Replay needs is lost, and nothing is added to lost. It reports
// whether it did so. seg and p are the segment and its problem. With gap,
// seg itself is whole but does not follow the segment before it. It is
// kept.
//
// The segments go oldest first, and the directory is fsynced after each
// removal. So a crash leaves a log that still begins with the damage (or
// the gap). The next Open refuses it, or drops it again. With ReadOnly
// nothing is removed. The Store's view starts at the kept segment all the
// same.
func (r *recovery) dropCovered(seg *segment, p *Problem, gap bool, later []string) (bool, error) {
	if r.base == nil {
		return false, nil
	}
	var drop []string
	for _, s := range r.segs {
		drop = append(drop, s.name)
	}
	from, head := seg.last+1, ""
	var resume uint64
	if gap {
		from = r.segs[len(r.segs)-1].last + 1
		resume, head = seg.first, seg.name
	} else {
		if len(later) == 0 || later[0] == r.foreign {
			// A segment whose records differ from the damaged one's
			// where they overlap (planBridge) must not become the log.
			return false, nil
		}
		resume = firstLSN(later[0])
		head = later[0]
		drop = append(drop, seg.name)
	}
	if resume <= from || resume > r.base.lsn+1 {
		return false, nil // nothing missing (cut above), or records replay needs
	}
	p.Bridge = &Bridge{FirstLSN: from, LastLSN: resume - 1, Snapshot: r.base.name, Segment: head}
	r.problems = append(r.problems, *p)
	r.log.Error("LOG CORRUPTION: RecoverTruncate drops the segments before it; the snapshot holds every record dropped, none after it is lost",
		"file", seg.name, "offset", p.Offset, "reason", p.Detail,
		"lost_lsns", fmt.Sprintf("%d..%d", from, resume-1), "snapshot", r.base.name,
		"log_starts_with", head, "removed_segments", drop)
	r.warnLostFallbacks(resume)
	for _, name := range drop {
		if r.opts.ReadOnly {
			break
		}
		if err := r.remove(name); err != nil {
			return false, err
		}
		if err := r.opts.FS.SyncDir(r.opts.Dir); err != nil {
			return false, fmt.Errorf("cannot fsync data dir %s: %w", r.opts.Dir, err)
		}
	}
	r.segs = nil
	return true, nil
}

// warnLostFallbacks warns of every snapshot other than the base that can
// no longer be loaded. The log now starts at LSN from, after it.
func (r *recovery) warnLostFallbacks(from uint64) {
	for _, sf := range r.snaps {
		if sf != r.base && sf.lsn+1 < from {
			r.log.Warn("a snapshot can no longer be a fallback: the log after it is gone",
				"snapshot", sf.name, "log_starts_at_lsn", from, "base", r.base.name)
		}
	}
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
