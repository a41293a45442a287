package snapshot_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

const crashDirEnv = "SNAPSHOT_CRASH_DIR"

// lockedWriter serializes the child's output lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// crashChild appends from 8 goroutines, writes a snapshot every few
// milliseconds and prints every durable LSN until it is killed.
func crashChild(dir string, mode snapshot.FsyncMode) {
	opts := benchOptions(dir)
	opts.Fsync = mode
	opts.SegmentBytes = 16 << 10
	s, err := snapshot.Open(opts)
	if err != nil {
		panic(err)
	}
	if _, err := s.Replay(nil, nil); err != nil {
		panic(err)
	}
	out := &lockedWriter{w: os.Stdout}
	s.Start(func(lsn uint64) { fmt.Fprintln(out, lsn) }, nil)
	for w := 0; w < 8; w++ {
		go func() {
			for i := 0; ; i++ {
				s.Append([]byte(fmt.Sprintf("worker=%d\ni=%d", w, i)))
			}
		}()
	}
	for { // snapshots in the background, as the main control does
		time.Sleep(5 * time.Millisecond)
		lsn := s.LastLSN()
		if err := s.WriteSnapshot(lsn, fill(strconv.FormatUint(lsn, 10))); err != nil {
			panic(err)
		}
		fmt.Fprintf(out, "snapshot %d\n", lsn)
	}
}

// TestStore_Kill9: a process killed with SIGKILL loses no record it
// reported durable, and the log reopens cleanly.
func TestStore_Kill9(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		mode, _ := snapshot.ParseFsyncMode(os.Getenv("SNAPSHOT_CRASH_MODE"))
		crashChild(dir, mode)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	for _, mode := range []snapshot.FsyncMode{snapshot.FsyncAlways, snapshot.FsyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			var confirmed uint64
			for round := 0; round < 3; round++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestStore_Kill9$")
				cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, "SNAPSHOT_CRASH_MODE="+mode.String())
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				sc := bufio.NewScanner(stdout)
				var last, snapped uint64
				for sc.Scan() {
					if l, ok := strings.CutPrefix(sc.Text(), "snapshot "); ok {
						snapped, err = strconv.ParseUint(l, 10, 64)
						require.NoError(t, err, sc.Text())
						continue
					}
					lsn, err := strconv.ParseUint(sc.Text(), 10, 64)
					require.NoError(t, err, sc.Text())
					last = lsn
					if lsn >= confirmed+5000 && snapped > 0 {
						break
					}
				}
				require.NoError(t, cmd.Process.Kill())
				_ = cmd.Wait()
				require.Greater(t, last, confirmed, "child made progress")
				confirmed = last

				opts, _ := testOptions(dir)
				s, err := snapshot.Open(opts)
				require.NoError(t, err)
				var next uint64
				var entries []string
				snapLSN, err := s.Replay(func(p []byte) error {
					entries = append(entries, string(p))
					return nil
				}, func(lsn uint64, p []byte) error {
					if next != 0 && lsn != next {
						return fmt.Errorf("record %d after %d", lsn, next-1)
					}
					next = lsn + 1
					return nil
				})
				require.NoError(t, err)
				assert.GreaterOrEqual(t, snapLSN, snapped, "a reported snapshot is loaded (or a newer one)")
				assert.Equal(t, []string{strconv.FormatUint(snapLSN, 10)}, entries)
				// A kill between the rename and the cleanup can leave a third.
				assert.LessOrEqual(t, len(snapshots(t, dir)), 3)
				assert.GreaterOrEqual(t, s.LastLSN(), confirmed, "no confirmed record lost (snapshot %d)", snapLSN)
				require.NoError(t, s.Close())
			}
		})
	}
}
