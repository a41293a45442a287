package snapshot_test

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// publishFS records, in order, each file renameio publishes and each
// fsync of the directory.
type publishFS struct {
	snapshot.FS
	mu  sync.Mutex
	ops []string
}

func (f *publishFS) add(op string) {
	f.mu.Lock()
	f.ops = append(f.ops, op)
	f.mu.Unlock()
}

func (f *publishFS) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops := f.ops
	f.ops = nil
	return ops
}

func (f *publishFS) SyncDir(path string) error {
	f.add("syncdir")
	return f.FS.SyncDir(path)
}

func (f *publishFS) CreateAtomic(path string, perm fs.FileMode) (snapshot.Pending, error) {
	p, err := f.FS.CreateAtomic(path, perm)
	if err != nil {
		return nil, err
	}
	return &publishPending{Pending: p, fs: f, name: filepath.Base(path)}, nil
}

type publishPending struct {
	snapshot.Pending
	fs   *publishFS
	name string
}

func (p *publishPending) CloseAtomicallyReplace() error {
	p.fs.add("publish " + p.name)
	return p.Pending.CloseAtomicallyReplace()
}

// TestIncremental_OneDirSyncPerSnapshot checks that a snapshot with a task
// part, a state part and its manifest fsyncs the directory once, after
// the manifest is published. The parts are published before it.
func TestIncremental_OneDirSyncPerSnapshot(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	pfs := &publishFS{FS: snapshot.OS}
	opts.FS = pfs
	rnd := rand.New(rand.NewPCG(7, 7))
	cur := newKV(3)
	w := startIncr(t, opts)
	defer w.close()
	for i := range 3 {
		cur.mutate(rnd, 40)
		cur.state["n"] = fmt.Sprint(i)
		lsn := appendN(t, w.s, 1)
		waitDurable(t, w.s, lsn)
		pfs.take()
		require.NoError(t, w.s.WriteIncremental(lsn, &kvSource{cur: cur, prev: w.prev, base: w.base}))
		w.prev, w.base = cur.clone(), lsn
		ops := pfs.take()
		require.Len(t, ops, 4, "%v", ops)
		require.True(t, strings.HasSuffix(ops[0], "-tasks"), "%v", ops)
		require.True(t, strings.HasSuffix(ops[1], "-state"), "%v", ops)
		require.Equal(t, []string{fmt.Sprintf("publish snapshot-%020d", lsn), "syncdir"}, ops[2:])
	}
}

// TestIncremental_MissingPartFallsBack checks the window that one fsync
// of the directory leaves. A power loss after the manifest's rename, and
// before that fsync, may keep the manifest's name but not its parts'.
// Startup then loads the previous snapshot and replays the log from it.
func TestIncremental_MissingPartFallsBack(t *testing.T) {
	dir := t.TempDir()
	opts, logs := testOptions(dir)
	prev, _, w := twoSnapshots(t, opts)
	w.close()
	ms := manifests(t, dir)
	require.Len(t, ms, 2)
	only, _ := partsOnlyIn(ms[1], ms[0])
	require.NotEmpty(t, only)
	for _, p := range only {
		require.NoError(t, os.Remove(filepath.Join(dir, p)))
	}
	got, lsn := loadKV(t, opts)
	require.Equal(t, prev.want(), got)
	require.Equal(t, ms[0].LSN, lsn)
	require.Contains(t, logs.String(), "snapshot uses an invalid part")
	s, r := MustStart(t, opts)
	require.Equal(t, ms[0].LSN, r.SnapLSN)
	require.NotEmpty(t, r.Records, "the log after the previous snapshot is replayed")
	require.NoError(t, s.Close())
}
