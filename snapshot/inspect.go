package snapshot

import (
	"fmt"
	"log/slog"
)

// DirInfo describes a data dir for the offline inspector.
type DirInfo struct {
	Dir       string         `json:"dir"`
	Snapshots []SnapshotInfo `json:"snapshots"`            // in LSN order
	Segments  []SegmentInfo  `json:"segments"`             // in LSN order
	TempFiles []string       `json:"temp_files,omitempty"` // leftover temporary files (Open removes them)
	// UnusedParts are snapshot parts no valid manifest uses.
	// Open removes them.
	UnusedParts []string  `json:"unused_parts,omitempty"`
	Problems    []Problem `json:"problems,omitempty"` // torn tails and corruption found in the log

	// What Open and Replay would do with the same Options.
	LoadSnapshot string `json:"load_snapshot"`        // the snapshot they would load; "" if none
	LastLSN      uint64 `json:"last_lsn"`             // the last LSN after recovery
	OpenError    string `json:"open_error,omitempty"` // why Open or Replay would fail; "" if they would not

	// RecoverTruncate is what Open and Replay would do with
	// Options.RecoverTruncate set, when they would fail without it.
	// It is nil otherwise. The Problems it would bridge carry a Bridge.
	RecoverTruncate *RecoverInfo `json:"recover_truncate,omitempty"`
}

// RecoverInfo is what Open and Replay would make of a data dir with
// Options.RecoverTruncate.
type RecoverInfo struct {
	LoadSnapshot string `json:"load_snapshot"` // the snapshot they would load; "" if none
	LastLSN      uint64 `json:"last_lsn"`      // the last LSN after recovery
	// Lost bounds from above the confirmed records that would be dropped.
	// It is 0 when every corruption is bridged (see Store.Lost).
	Lost      uint64 `json:"lost"`
	OpenError string `json:"open_error,omitempty"` // why Open or Replay would still fail
}

// SnapshotInfo describes one snapshot file.
// That is a whole snapshot (format 1) or a manifest (format 2 or 3) with its parts.
type SnapshotInfo struct {
	Name    string     `json:"name"`
	LSN     uint64     `json:"lsn"`
	Format  uint32     `json:"format,omitempty"`
	Size    int64      `json:"size"`
	Entries uint64     `json:"entries"` // entries read (all of them if Valid)
	Valid   bool       `json:"valid"`
	Error   string     `json:"error,omitempty"` // why it is invalid
	Parts   []PartInfo `json:"parts,omitempty"`
	// Ranges is how many id ranges the manifest gives a base.
	Ranges int `json:"ranges,omitempty"`
}

// PartInfo describes one part of a manifest.
type PartInfo struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // tasks, runs or state
	Size    int64  `json:"size"`
	Entries uint64 `json:"entries"`
	Valid   bool   `json:"valid"`
	Error   string `json:"error,omitempty"`
}

// SegmentInfo describes one log segment file.
type SegmentInfo struct {
	Name       string `json:"name"`
	FirstLSN   uint64 `json:"first_lsn"`   // from the name
	LastLSN    uint64 `json:"last_lsn"`    // of the last valid record; FirstLSN-1 if none
	Size       int64  `json:"size"`        // file size
	ValidBytes int64  `json:"valid_bytes"` // bytes of the header and valid records from the start
	Records    int    `json:"records"`     // valid records
}

// Inspect describes the data dir opts.Dir without modifying it.
// It forces ReadOnly. Every snapshot is validated and every segment scanned.
// Problems are reported rather than returned.
// The error is for a dir that cannot be read.
func Inspect(opts Options) (*DirInfo, error) {
	opts.ReadOnly = true
	o := opts.withDefaults()
	l, err := listDir(o.FS, o.Dir)
	if err != nil {
		return nil, err
	}
	info := &DirInfo{Dir: o.Dir, TempFiles: l.temps}
	r := &recovery{opts: o}
	cache := map[string]*partCheck{}
	used := map[string]bool{}
	for _, sf := range l.snaps {
		version, idx, entries, size, err := readManifest(o.FS, joinDir(o.Dir, sf.name), sf.lsn, nil)
		si := SnapshotInfo{Name: sf.name, LSN: sf.lsn, Format: version, Size: size, Entries: entries, Valid: err == nil}
		if idx != nil {
			si.Ranges = len(idx.ranges)
			for _, p := range idx.parts {
				c := r.checkPart(cache, p, idx.rangeBits)
				pi := PartInfo{Name: p.name(), Kind: partKindName(p.kind), Size: p.size, Entries: p.entries, Valid: c.err == nil}
				if c.err != nil {
					pi.Error = c.err.Error()
					if si.Valid {
						si.Valid, err = false, fmt.Errorf("part %s: %w", p.name(), c.err)
					}
				}
				si.Parts = append(si.Parts, pi)
			}
		}
		if err != nil {
			si.Error = err.Error()
		} else {
			for _, p := range si.Parts {
				used[p.Name] = true
			}
		}
		info.Snapshots = append(info.Snapshots, si)
	}
	for _, p := range l.parts {
		if !used[p] {
			info.UnusedParts = append(info.UnusedParts, p)
		}
	}
	var prev *SegmentInfo
	for i, name := range l.segments {
		first, _ := parseSegName(name)
		seg, p, err := scanSegment(o.FS, o.Dir, name, first, i == len(l.segments)-1)
		if err != nil {
			return nil, fmt.Errorf("cannot open log segment %s: %w", name, err)
		}
		if prev != nil && prev.Size == prev.ValidBytes && first != prev.LastLSN+1 {
			info.Problems = append(info.Problems, Problem{File: name, Kind: ProblemCorrupt, Bytes: seg.fileSize,
				Detail: fmt.Sprintf("segment starts at LSN %d but %s ends at LSN %d", first, prev.Name, prev.LastLSN)})
		}
		if p != nil {
			info.Problems = append(info.Problems, *p)
		}
		info.Segments = append(info.Segments, SegmentInfo{Name: name, FirstLSN: seg.first, LastLSN: seg.last,
			Size: seg.fileSize, ValidBytes: seg.start + seg.size, Records: seg.records})
		prev = &info.Segments[len(info.Segments)-1]
	}
	quiet := o
	quiet.Logger = slog.New(slog.DiscardHandler)
	ri := info.dryRun(quiet)
	info.LoadSnapshot, info.LastLSN, info.OpenError = ri.LoadSnapshot, ri.LastLSN, ri.OpenError
	if info.OpenError != "" && !quiet.RecoverTruncate {
		quiet.RecoverTruncate = true
		info.RecoverTruncate = info.dryRun(quiet)
	}
	return info, nil
}

// dryRun opens the dir read-only with o and says what Open and Replay would do.
// It marks the Problems that Open bridges.
func (info *DirInfo) dryRun(o Options) *RecoverInfo {
	ri := &RecoverInfo{}
	s, err := Open(o)
	if err != nil {
		ri.OpenError = err.Error()
		return ri
	}
	defer s.Close()
	if s.replayErr != nil {
		ri.OpenError = s.replayErr.Error()
	}
	if s.base != nil {
		ri.LoadSnapshot = s.base.name
	}
	ri.LastLSN, ri.Lost = s.LastLSN(), s.Lost()
	for _, bp := range s.problems {
		if bp.Bridge == nil {
			continue
		}
		for i, p := range info.Problems {
			if p.File == bp.File && p.Offset == bp.Offset {
				info.Problems[i].Bridge = bp.Bridge
			}
		}
	}
	return ri
}
