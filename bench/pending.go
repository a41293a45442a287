package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"
)

// PendingConfig is scenario 4. It holds a million tasks nobody serves, then restarts.
// The harness starts the main control with a data dir.
type PendingConfig struct {
	Binary    string
	Tasks     int64  // default 1,000,000
	Fsync     string // never (default), batch or always
	DataDir   string // "" means a temp dir
	Producers int    // default 4
	Payload   int    // default 16
	TokenFile string // shared token: the main control requires it (auth on); "" is auth off
	Args      []string
	Progress  io.Writer
}

// PendingReport is what the pending tasks cost and how long restarts take.
type PendingReport struct {
	Tasks        int64   `json:"tasks"`
	Fsync        string  `json:"fsync"`
	SubmitS      float64 `json:"submit_s"`
	SubmitRate   float64 `json:"submit_rate"`
	RSSBefore    int64   `json:"rss_before_bytes"`
	RSSAfter     int64   `json:"rss_after_bytes"`
	PeakRSS      int64   `json:"peak_rss_bytes"`
	BytesPerTask float64 `json:"bytes_per_task"`
	DataDirBytes int64   `json:"data_dir_bytes"`
	// StopS is how long a SIGTERM took.
	// That covers answering what is in flight and a last snapshot.
	// CleanRestartS is the start after it, until the listener said welcome.
	StopS         float64 `json:"stop_s"`
	CleanRestartS float64 `json:"clean_restart_s"`
	CleanPending  uint64  `json:"clean_restart_pending"`
	RSSAfterClean int64   `json:"rss_after_clean_restart_bytes"`
	// KillRestartS is the start after a kill -9 (snapshot plus log replay).
	KillRestartS float64 `json:"kill_restart_s"`
	KillPending  uint64  `json:"kill_restart_pending"`
}

// RunPending submits cfg.Tasks tasks of a type no executor serves.
// It reports the memory they take.
// Then it restarts the main control twice, by SIGTERM and then kill -9.
// It times each start until the listener answers.
func RunPending(ctx context.Context, cfg PendingConfig) (*PendingReport, error) {
	if cfg.Tasks <= 0 {
		cfg.Tasks = 1_000_000
	}
	if cfg.Fsync == "" {
		cfg.Fsync = "never"
	}
	if cfg.Fsync == "off" {
		return nil, fmt.Errorf("%w: the pending scenario restarts from disk: fsync never, batch or always", ErrBadConfig)
	}
	token, tokenArgs, err := loadTokenFile(cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"--max-pending", strconv.FormatInt(cfg.Tasks+1000, 10)}, tokenArgs...), cfg.Args...)
	mc, err := StartMainControl(ctx, MainControlOptions{Binary: cfg.Binary, Fsync: cfg.Fsync, DataDir: cfg.DataDir, Args: args})
	if err != nil {
		return nil, err
	}
	defer mc.Close()
	rep := &PendingReport{Tasks: cfg.Tasks, Fsync: cfg.Fsync}
	time.Sleep(500 * time.Millisecond)
	if rep.RSSBefore, _, err = ProcMem(mc.PID()); err != nil {
		return nil, err
	}
	run := Config{Producers: cfg.Producers, Executors: -1, Payload: cfg.Payload, TaskType: "bench-nobody",
		Tasks: cfg.Tasks, Fsync: cfg.Fsync, Progress: cfg.Progress, Token: token}
	if run.Payload == 0 {
		run.Payload = 16
	}
	if run, err = run.withDefaults(); err != nil {
		return nil, err
	}
	t := &target{addr: mc.Addr, pid: mc.PID(), mc: mc} // mc: reported as the harness's own; pending stops it itself
	load, err := runOnce(ctx, run, t, "submit ")
	if err != nil {
		return nil, err
	}
	if load.Accepted != cfg.Tasks {
		return nil, fmt.Errorf("only %d of %d submits were accepted (%d errors %v)", load.Accepted, cfg.Tasks, load.Errors, load.ErrorCodes)
	}
	rep.SubmitS, rep.SubmitRate = load.Elapsed, float64(load.Accepted)/load.Elapsed
	time.Sleep(2 * time.Second) // let a running snapshot finish and the heap settle
	if rep.RSSAfter, rep.PeakRSS, err = ProcMem(mc.PID()); err != nil {
		return nil, err
	}
	rep.BytesPerTask = float64(rep.RSSAfter-rep.RSSBefore) / float64(cfg.Tasks)

	stop, err := mc.Stop()
	if err != nil {
		return nil, err
	}
	rep.StopS = stop.Seconds()
	rep.DataDirBytes = dirSize(mc.DataDir)
	took, err := mc.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("clean restart: %w", err)
	}
	rep.CleanRestartS = took.Seconds()
	if rep.CleanPending, err = pendingCount(mc.Addr, token); err != nil {
		return nil, err
	}
	rep.RSSAfterClean, _, _ = ProcMem(mc.PID())

	mc.Kill()
	if took, err = mc.Start(ctx); err != nil {
		return nil, fmt.Errorf("restart after kill -9: %w", err)
	}
	rep.KillRestartS = took.Seconds()
	if rep.KillPending, err = pendingCount(mc.Addr, token); err != nil {
		return nil, err
	}
	return rep, nil
}

// pendingCount asks for stats and returns tasks.pending.
func pendingCount(addr string, token []byte) (uint64, error) {
	fc, err := dialClient(addr, nil, token, "apollo11-bench", 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer fc.c.Close()
	m, err := stats(fc)
	if err != nil {
		return 0, err
	}
	return statUint(m, "tasks.pending"), nil
}

// dirSize sums the sizes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, ierr := d.Info(); ierr == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// WriteJSON writes the report as indented JSON.
func (r *PendingReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *PendingReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `apollo11-bench pending: %s tasks pending (fsync %s)
  submit          %.1f s, %s tasks/s
  rss             %s before, %s after (peak %s)
  per task        %s bytes
  data dir        %s
  SIGTERM stop    %.2f s
  clean restart   %.2f s to welcome, %s pending after it, rss %s
  kill -9 restart %.2f s to welcome, %s pending after it
`, group(float64(r.Tasks)), r.Fsync, r.SubmitS, group(r.SubmitRate), mib(r.RSSBefore), mib(r.RSSAfter), mib(r.PeakRSS),
		group(r.BytesPerTask), mib(r.DataDirBytes), r.StopS, r.CleanRestartS, group(float64(r.CleanPending)),
		mib(r.RSSAfterClean), r.KillRestartS, group(float64(r.KillPending)))
	return err
}
