package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/snapshot"
)

// recover reads the stable state and checks every segment.
// A torn tail of the newest segment is cut; other damage is an error.
func (s *Store) recover() error {
	ents, err := s.fsys.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case e.IsDir():
		case isTemp(name):
			s.log.Warn("removing a temporary file a crash left", "file", name)
			if err := s.fsys.Remove(filepath.Join(s.dir, name)); err != nil {
				return err
			}
		case parseSegName(name) > 0:
			names = append(names, name)
		}
	}
	slices.Sort(names)
	first, err := s.stable.load(s.fsys, s.dir)
	if err != nil {
		return err
	}
	changed := false
	for i, name := range names {
		g, cut, err := s.scan(name, i == len(names)-1)
		if err != nil {
			return err
		}
		changed = changed || cut
		if n := len(s.segs); n > 0 && s.segs[n-1].last()+1 != g.first {
			g.f.Close()
			return fmt.Errorf("segment %s starts at index %d but %s ends at %d: segments are missing",
				name, g.first, s.segs[n-1].name, s.segs[n-1].last())
		}
		s.segs = append(s.segs, g)
	}
	// Segments wholly before the first index kept are what a prefix delete
	// had not yet removed. A newest segment left empty is dropped too.
	drop := 0
	for drop < len(s.segs) && s.segs[drop].last() < first {
		drop++
	}
	if n := len(s.segs); n > drop && len(s.segs[n-1].offs) == 0 {
		g := s.segs[n-1]
		s.segs = s.segs[:n-1]
		if err := s.removeSegment(g); err != nil {
			return err
		}
		changed = true
	}
	if drop > 0 {
		old := s.segs[:drop]
		s.segs = s.segs[drop:]
		for _, g := range old {
			if err := s.removeSegment(g); err != nil {
				return err
			}
		}
		changed = true
	}
	if len(s.segs) == 0 {
		if first != 0 {
			if err := removeFirst(s.fsys, s.dir); err != nil {
				return err
			}
			changed = true
		}
	} else {
		s.first = max(first, s.segs[0].first)
	}
	if changed {
		return s.syncDir()
	}
	return nil
}

// scan checks one segment and indexes its records. A torn tail of the
// newest segment is cut and fsynced; cut says so.
func (s *Store) scan(name string, newest bool) (g *segment, cut bool, err error) {
	f, err := s.fsys.OpenFile(filepath.Join(s.dir, name), os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	g = &segment{name: name, first: parseSegName(name), f: f}
	sc, err := snapshot.ScanLog(f, name, st.Size(), segFormat, g.first, newest, func(_ uint64, off int64, _ []byte) {
		g.offs = append(g.offs, off)
	})
	if err != nil {
		return nil, false, err
	}
	g.end = sc.End
	p := sc.Problem
	if p == nil {
		return g, false, nil
	}
	if p.Kind != snapshot.ProblemTorn {
		return nil, false, &snapshot.CorruptError{File: name, Offset: p.Offset, Reason: p.Detail}
	}
	s.log.Warn("cutting the torn tail of the newest raft log segment", "file", name,
		"offset", p.Offset, "bytes", p.Bytes, "reason", p.Detail)
	// A torn header (End 0) leaves an empty segment, which recover drops.
	if err := f.Truncate(g.end); err != nil {
		return nil, false, fmt.Errorf("cannot cut %s at offset %d: %w", name, g.end, err)
	}
	if err := f.Sync(); err != nil {
		return nil, false, fmt.Errorf("cannot fsync %s: %w", name, err)
	}
	return g, true, nil
}

// parseSegName returns the first index a segment's name holds, 0 when
// name is not a segment's.
func parseSegName(name string) uint64 {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || len(digits) != 20 || strings.Trim(digits, "0123456789") != "" {
		return 0
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// isTemp reports whether name is a temporary file of writeSmall (renameio's
// "."+target+digits).
func isTemp(name string) bool {
	for _, target := range []string{stableName, firstName} {
		if rest, ok := strings.CutPrefix(name, "."+target); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}
