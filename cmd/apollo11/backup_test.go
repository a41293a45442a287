package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/snapshot"
)

func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "snapshot-*[0-9]"))
	require.NoError(t, err)
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	slices.Sort(m)
	return m
}

func dialClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Name: "backup-test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func submitN(t *testing.T, c *client.Client, n int) {
	t.Helper()
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := c.Submit(ctx, client.SubmitRequest{Type: "t"})
		cancel()
		require.NoError(t, err)
	}
}

func pendingIDs(t *testing.T, c *client.Client) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ids, err := c.ListAll(ctx, "pending")
	require.NoError(t, err)
	return ids
}

// A live server may drop, between the listing and the copy, every log
// segment the copied snapshots need, after newer snapshots that hold
// them. Such a copy loads, but without changes confirmed before the
// backup began. It is made again.
func TestBackup_CopiesAgainWhatTheServerSpoiled(t *testing.T) {
	src := t.TempDir()
	addr, _ := maincontroltest.Start(t, maincontrol.Config{DataDir: src, SnapshotEvery: 10, SegmentBytes: 1024})
	c := dialClient(t, addr)
	submitN(t, c, 25)
	waitSnapshotsSettled(t, c, src, 10)

	var copies []string
	t.Cleanup(func() { backupHook = func(string) {} })
	backupHook = func(copied string) {
		copies = append(copies, copied)
		if len(copies) == 2 {
			// A snapshot the rest held back would drop segments under
			// the second copy.
			waitSnapshotsSettled(t, c, src, 10)
		}
		if len(copies) != 1 {
			return
		}
		listed := logFiles(t, src)
		for range 200 {
			submitN(t, c, 10)
			if !slices.ContainsFunc(logFiles(t, src), func(n string) bool { return slices.Contains(listed, n) }) {
				return
			}
		}
		t.Fatalf("the server kept log segments %v through 2,000 submits", listed)
	}
	dest := filepath.Join(t.TempDir(), "copy")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"backup", "--data-dir", src, dest}, &out, &errb), errb.String())
	assert.Equal(t, []string{"snapshots", "log", "snapshots", "log"}, copies, "one spoiled copy, then a whole one")
	assert.Contains(t, out.String(), "backup of "+src+" in "+dest)
	leftovers, err := filepath.Glob(filepath.Join(filepath.Dir(dest), ".copy.backup-*"))
	require.NoError(t, err)
	assert.Empty(t, leftovers, "the spoiled copy is removed")

	want := pendingIDs(t, c)
	require.Greater(t, len(want), 25)
	addr2, _ := maincontroltest.Start(t, maincontrol.Config{DataDir: dest})
	assert.Equal(t, want, pendingIDs(t, dialClient(t, addr2)))
}

// The server drops segments oldest first: one that is gone when the
// copy reaches it leaves the segments copied before it cut off by a gap,
// which recovery refuses. They are left out of the copy, which then
// loads at the first try when its snapshot holds their records.
func TestBackup_LeavesOutSegmentsBeforeAGap(t *testing.T) {
	src := t.TempDir()
	addr, stop := maincontroltest.Start(t, maincontrol.Config{DataDir: src, SnapshotEvery: 1000, SegmentBytes: 1024})
	c := dialClient(t, addr)
	submitN(t, c, 100)
	want := pendingIDs(t, c)
	stop() // its last snapshot holds every record; every segment is kept
	segs := logFiles(t, src)
	require.GreaterOrEqual(t, len(segs), 3)

	var copies []string
	t.Cleanup(func() { backupHook, backupFileHook = func(string) {}, func(string) {} })
	backupHook = func(group string) { copies = append(copies, group) }
	backupFileHook = func(name string) {
		if name == filepath.Base(segs[0]) && len(copies) == 1 {
			// As a server does after two newer snapshots.
			require.NoError(t, os.Remove(segs[0]))
			require.NoError(t, os.Remove(segs[1]))
		}
	}
	dest := filepath.Join(t.TempDir(), "copy")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"backup", "--data-dir", src, dest}, &out, &errb), errb.String())
	assert.Equal(t, []string{"snapshots", "log"}, copies, "one copy")
	assert.NoFileExists(t, filepath.Join(dest, filepath.Base(segs[0])))
	addr2, _ := maincontroltest.Start(t, maincontrol.Config{DataDir: dest})
	assert.Equal(t, want, pendingIDs(t, dialClient(t, addr2)))
}

// waitSnapshotsSettled waits for records after the newest snapshot,
// fewer than every (--snapshot-every): none is being written, and none
// starts before more come.
func waitSnapshotsSettled(t *testing.T, c *client.Client, src string, every uint64) {
	t.Helper()
	require.Eventually(t, func() bool {
		snaps := snapshotFiles(t, src)
		if len(snaps) < 2 {
			return false
		}
		newest, err := strconv.ParseUint(strings.TrimPrefix(snaps[len(snaps)-1], "snapshot-"), 10, 64)
		if err != nil {
			return false
		}
		written, err := snapshot.LastWritten(snapshot.Options{Dir: src})
		if err != nil {
			return false
		}
		if written == newest {
			submitN(t, c, 1)
		}
		return written > newest && written-newest < every
	}, 20*time.Second, 10*time.Millisecond)
}

func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	return m
}

// DEST must be new (or an empty directory); the source must exist.
func TestBackup_Refuses(t *testing.T) {
	src := t.TempDir()
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o600))
	var out, errb bytes.Buffer
	assert.Equal(t, 1, run([]string{"backup", "--data-dir", src, full}, &out, &errb), "not a bad command line")
	assert.Contains(t, errb.String(), "is not empty")
	errb.Reset()
	assert.Equal(t, 2, run([]string{"backup", "--data-dir", src}, &out, &errb))
	assert.Contains(t, errb.String(), "want one DEST")
	errb.Reset()
	assert.Equal(t, 1, run([]string{"backup", "--data-dir", filepath.Join(src, "none"), filepath.Join(full, "new")}, &out, &errb))
	assert.Contains(t, errb.String(), "cannot read data dir")

	// A dir no start would load gives no backup, and leaves nothing.
	require.NoError(t, os.WriteFile(filepath.Join(src, "snapshot-00000000000000000010"), []byte("garbage"), 0o600))
	parent := t.TempDir()
	errb.Reset()
	assert.Equal(t, 1, run([]string{"backup", "--data-dir", src, filepath.Join(parent, "new")}, &out, &errb))
	assert.Contains(t, errb.String(), "no copy that loads in 5 attempts")
	assert.Contains(t, errb.String(), "records 1..10")
	left, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// Under load, with the real binary: producers submit while the backup
// runs; a main control started on the copy has every submit confirmed
// before the backup began.
func TestBackup_UnderLoad(t *testing.T) {
	bin := testbin.Build(t)
	src := t.TempDir()
	p := testbin.StartMaincontrol(t, bin, "--data-dir", src, "--log-level", "warn", "--snapshot-every", "50")
	var (
		mu        sync.Mutex
		confirmed []uint64
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		c := dialClient(t, p.Addr)
		wg.Go(func() {
			for ctx.Err() == nil {
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				s, err := c.Submit(rctx, client.SubmitRequest{Type: "t", Args: map[string]string{"pad": "0123456789012345678901234567890123456789"}})
				cancel()
				if err != nil {
					return // stopped
				}
				mu.Lock()
				confirmed = append(confirmed, s.ID)
				mu.Unlock()
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(confirmed)
	}
	require.Eventually(t, func() bool { return count() >= 2000 && len(snapshotFiles(t, src)) == 2 },
		60*time.Second, 10*time.Millisecond, "load under way")
	mu.Lock()
	before := slices.Clone(confirmed)
	mu.Unlock()
	dest := filepath.Join(t.TempDir(), "copy")
	out, err := exec.Command(bin, "backup", "--data-dir", src, dest).CombinedOutput()
	require.NoError(t, err, "%s", out)
	after := count()
	stop()
	wg.Wait()
	assert.Greater(t, after, len(before), "the load ran during the backup")
	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), "%s", p.Output())

	q := testbin.StartMaincontrol(t, bin, "--data-dir", dest, "--log-level", "warn")
	have := map[uint64]bool{}
	for _, id := range pendingIDs(t, dialClient(t, q.Addr)) {
		have[id] = true
	}
	var missing []uint64
	for _, id := range before {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	assert.Empty(t, missing, "confirmed before the backup began, absent from the copy (of %d)", len(before))
	q.Signal(syscall.SIGTERM)
	require.NoError(t, q.Wait(20*time.Second), "%s", q.Output())
}
