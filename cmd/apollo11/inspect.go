package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
)

// inspectReport is what `apollo11 inspect` prints, also as --json.
type inspectReport struct {
	Dir         *snapshot.DirInfo    `json:"dir"`
	NextTaskID  uint64               `json:"next_task_id"`
	StateVer    uint64               `json:"state_version"`
	Counts      map[string]int       `json:"tasks"`
	Executors   []core.ExecutorInfo  `json:"executors"`
	SharedState map[string]string    `json:"shared_state"`
	Task        *core.TaskInfo       `json:"task,omitempty"`
	History     []inspectHistoryLine `json:"history,omitempty"`
}

type inspectHistoryLine struct {
	Where string `json:"where"` // snapshot or lsn
	Kind  string `json:"kind"`
	Text  string `json:"text"`
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "inspect --data-dir DIR [TASK_ID]", stdout)
	dir := fs.String("data-dir", "apollo-data", "data directory to read (never modified; safe on a copy while the daemon runs)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlagsOperands(fs, args); err != nil {
		return err
	}
	var taskID uint64
	if fs.NArg() > 1 {
		return usageError(fmt.Errorf("at most one TASK_ID"))
	}
	if fs.NArg() == 1 {
		id, err := parseTaskID(fs.Arg(0))
		if err != nil {
			return usageError(err)
		}
		taskID = id
	}
	rep, err := inspectDir(*dir, taskID)
	if err != nil {
		return err
	}
	if *asJSON {
		err = printJSON(stdout, rep)
	} else {
		printInspect(stdout, rep, taskID)
	}
	if err == nil && (rep.Dir.OpenError != "" || taskID != 0 && rep.Task == nil && len(rep.History) == 0) {
		// The report is printed; the exit code lets a script tell that
		// the main control would refuse this dir, or that nothing at
		// all is known of the task asked for (as status exits 1 on
		// unknown_task). A task dropped by retention whose records are
		// still in the log is known: its history is the answer.
		return exitError{Code: 1}
	}
	return err
}

// inspectDir reads a data dir without changing it. It lists the files,
// then replays into a core that sends nothing anywhere.
func inspectDir(dir string, taskID uint64) (*inspectReport, error) {
	quiet := slog.New(slog.DiscardHandler)
	opts := snapshot.Options{Dir: dir, ReadOnly: true, Logger: quiet}
	info, err := snapshot.Inspect(opts)
	if err != nil {
		return nil, err
	}
	rep := &inspectReport{Dir: info, Counts: map[string]int{}}
	if info.OpenError != "" {
		return rep, nil
	}
	c, err := core.New(core.Config{Logger: quiet}, core.Discard{})
	if err != nil {
		return nil, err
	}
	st, err := snapshot.Open(opts)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	note := func(where string, payload []byte) {
		if taskID == 0 {
			return
		}
		d, err := core.DescribeRecord(payload)
		if err == nil && slices.Contains(d.TaskIDs, taskID) {
			rep.History = append(rep.History, inspectHistoryLine{Where: where, Kind: d.Kind, Text: d.Text})
		}
	}
	// Recovery runs as the main control runs it, into a core that keeps
	// nothing. It settles the waiting tasks whose dependencies ended
	// before the crash, and skips the ids a --recover-truncate cut lost.
	_, err = maincontrol.Restore(st, c, maincontrol.RestoreOptions{Entry: func(p []byte) { note("snapshot", p) }})
	if err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", dir, err)
	}
	if taskID != 0 { // the whole log kept, also the part before the snapshot
		err = st.ReadLog(func(lsn uint64, p []byte) error {
			note("lsn "+strconv.FormatUint(lsn, 10), p)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cannot read the log of %s: %w", dir, err)
		}
	}
	counts := c.Counts()
	for _, s := range core.AllStates {
		rep.Counts[s.String()] = counts[s]
	}
	rep.NextTaskID = c.NextTaskID()
	rep.SharedState, rep.StateVer = c.SharedState()
	rep.Executors = c.Executors()
	if taskID != 0 {
		if t, ok := c.Task(taskID); ok {
			rep.Task = &t
		}
	}
	return rep, nil
}

func printInspect(w io.Writer, rep *inspectReport, taskID uint64) {
	d := rep.Dir
	fmt.Fprintf(w, "data dir %s\n", d.Dir)
	for _, s := range d.Snapshots {
		status := "valid"
		if !s.Valid {
			status = "INVALID: " + s.Error
		}
		if s.Format < 2 {
			fmt.Fprintf(w, "  snapshot %s  lsn %d  %s  %d entries  %s\n", s.Name, s.LSN, size(s.Size), s.Entries, status)
			continue
		}
		fmt.Fprintf(w, "  snapshot %s  lsn %d  manifest %s  %d head entries  %d parts  %d range bases  %s\n",
			s.Name, s.LSN, size(s.Size), max(s.Entries, 1)-1, len(s.Parts), s.Ranges, status)
		for _, p := range s.Parts {
			pstatus := "valid"
			if !p.Valid {
				pstatus = "INVALID: " + p.Error
			}
			fmt.Fprintf(w, "    part   %s  %s  %s  %d entries  %s\n", p.Name, p.Kind, size(p.Size), p.Entries, pstatus)
		}
	}
	for _, p := range d.UnusedParts {
		fmt.Fprintf(w, "  unused   %s (no valid snapshot uses it; removed at the next start)\n", p)
	}
	for _, s := range d.Segments {
		fmt.Fprintf(w, "  segment  %s  lsn %d-%d  %s  %d records\n", s.Name, s.FirstLSN, s.LastLSN, size(s.Size), s.Records)
	}
	for _, p := range d.Problems {
		fmt.Fprintf(w, "  problem  %s at byte %d: %s (%s, %d bytes)\n", p.File, p.Offset, p.Kind, p.Detail, p.Bytes)
		if b := p.Bridge; b != nil {
			fmt.Fprintf(w, "           --recover-truncate skips it: records before lsn %d dropped (%s holds them); the log resumes at lsn %d in %s\n",
				b.LastLSN+1, b.Snapshot, b.LastLSN+1, b.Segment)
		}
	}
	for _, f := range d.TempFiles {
		fmt.Fprintf(w, "  leftover %s (removed at the next start)\n", f)
	}
	if d.OpenError != "" {
		fmt.Fprintf(w, "the main control would NOT start on this dir: %s\n", d.OpenError)
		if rt := d.RecoverTruncate; rt != nil {
			switch {
			case rt.OpenError != "":
				fmt.Fprintf(w, "with --recover-truncate it would not start either: %s\n", rt.OpenError)
			case rt.Lost == 0:
				fmt.Fprintf(w, "with --recover-truncate it would start and lose no confirmed record: recovery loads %q, then the log up to lsn %d\n",
					rt.LoadSnapshot, rt.LastLSN)
			default:
				fmt.Fprintf(w, "with --recover-truncate it would start, losing up to %d confirmed records (their task ids are skipped): recovery loads %q, then the log up to lsn %d\n",
					rt.Lost, rt.LoadSnapshot, rt.LastLSN)
			}
		}
		return
	}
	fmt.Fprintf(w, "recovery loads %q, then the log up to lsn %d\n\n", d.LoadSnapshot, d.LastLSN)
	fmt.Fprintf(w, "next task id %d, shared state version %d\n", rep.NextTaskID, rep.StateVer)
	var parts []string
	total := 0
	for _, s := range core.AllStates {
		parts = append(parts, fmt.Sprintf("%s=%d", s, rep.Counts[s.String()]))
		total += rep.Counts[s.String()]
	}
	fmt.Fprintf(w, "tasks %d: %s\n", total, strings.Join(parts, " "))
	for _, e := range rep.Executors {
		fmt.Fprintf(w, "executor %s  types %s  slots %d  holding %d\n", e.ID, strings.Join(e.Types, ","), e.Slots, e.Load)
	}
	keys := slices.Sorted(maps.Keys(rep.SharedState))
	for _, k := range keys {
		fmt.Fprintf(w, "state %s=%s\n", k, rep.SharedState[k])
	}
	if taskID == 0 {
		return
	}
	fmt.Fprintln(w)
	if rep.Task == nil {
		fmt.Fprintf(w, "task %d is not known (never made, or dropped by retention)\n", taskID)
	} else {
		t := rep.Task
		fmt.Fprintf(w, "task %d  %s  version %d  attempt %d/%d  type %s  priority %d\n",
			t.ID, t.State, t.Version, t.Attempt, t.MaxAttempts, t.Type, t.Priority)
		fmt.Fprintf(w, "  executor %q  trace_id %s  key %q\n  created %s  updated %s\n", t.Executor, t.TraceID, t.Key,
			t.Created.UTC().Format("2006-01-02T15:04:05.000Z"), t.Updated.UTC().Format("2006-01-02T15:04:05.000Z"))
		if t.Error != "" {
			fmt.Fprintf(w, "  error %s\n", t.Error)
		}
		for k, v := range t.Fields() {
			fmt.Fprintf(w, "  %s %q\n", k, v)
		}
		for _, line := range nonEmptyLines(t.Args + "\n" + t.Out) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "history (%d records):\n", len(rep.History))
	for _, h := range rep.History {
		fmt.Fprintf(w, "  %-10s %-9s %s\n", h.Where, h.Kind, h.Text)
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
