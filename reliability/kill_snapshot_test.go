package reliability_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/snapshot"
)

// manifestName matches a snapshot manifest; partName a part of one.
var (
	manifestName = regexp.MustCompile(`^snapshot-(\d{20})$`)
	partName     = regexp.MustCompile(`^snapshot-(\d{20})-(tasks|state|runs)$`)
)

// TestMaincontrol_Kill9DuringSnapshots kills the main control with
// SIGKILL under load while it snapshots after every log record, so that
// kills land in the middle of snapshot writes (parts written, manifest
// not yet published). After every restart nothing confirmed is lost and
// no task id or version is given twice (the ledger checks both).
func TestMaincontrol_Kill9DuringSnapshots(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	sc := currentScale()
	fig := figures.add(12, "kill -9 of the main control while it snapshots after every record", "rounds")
	dir := t.TempDir()
	// Unpaced, so that the next snapshot starts as soon as one ends: a
	// paced one rests three times its work between them.
	flags := []string{"--snapshot-every", "1", "--snapshot-duty", "1", "--retention-max", "100000000"}
	l := newLedger()
	rng := rand.New(rand.NewPCG(12, uint64(sc.snapKillRounds)))
	var killedAt time.Time
	halfWritten := 0
	for round := 0; ; round++ {
		mc := startMain(t, dir, flags...)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		if !killedAt.IsZero() {
			fig.recovered(time.Since(killedAt))
		}
		fig.lost += l.verify(t, mc.Addr, nil, false)
		if t.Failed() {
			t.FailNow()
		}
		if round == sc.snapKillRounds {
			tally(fig, l)
			mc.Kill()
			break
		}
		killedAt = loadAndKill(t, mc, l, round, rng.Uint64(), time.Duration(1000+rng.IntN(2000))*time.Millisecond)
		fig.injected++
		if snapshotHalfWritten(t, dir) {
			halfWritten++
		}
	}
	require.NotZero(t, fig.confirmed)
	fig.note("%d of %d kills left a snapshot half written (a part or temp file without its manifest)", halfWritten, fig.injected)
}

// snapshotHalfWritten reports whether dir holds what a snapshot cut short
// leaves: a renameio temp file, or a part newer than every manifest.
func snapshotHalfWritten(t testing.TB, dir string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	newest := ""
	var parts []string
	for _, e := range ents {
		name := e.Name()
		if name[0] == '.' {
			return true
		}
		if m := manifestName.FindStringSubmatch(name); m != nil {
			newest = max(newest, m[1])
		}
		if m := partName.FindStringSubmatch(name); m != nil {
			parts = append(parts, m[1])
		}
	}
	return slices.ContainsFunc(parts, func(lsn string) bool { return lsn > newest })
}

// TestMaincontrol_SnapshotCorruption stops the main control with SIGKILL
// after several snapshots, flips bytes in one snapshot file, and restarts
// it: a corrupt newest manifest, or a part only the newest manifest
// uses, falls back to the previous snapshot with nothing confirmed lost;
// a corrupt part every loadable manifest uses stops startup with an error
// naming the part, and inspect exits 1.
func TestMaincontrol_SnapshotCorruption(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	fig := figures.add(13, "corrupt snapshot manifest or part, then restart", "corruptions")
	flags := []string{"--snapshot-every", "20", "--retention-max", "100000000"}
	pick := map[string]func(newest, prev snapshot.SnapshotInfo) string{
		"newest manifest": func(newest, _ snapshot.SnapshotInfo) string { return newest.Name },
		"part only the newest uses": func(newest, prev snapshot.SnapshotInfo) string {
			return firstPart(newest, func(p string) bool { return !hasPart(prev, p) })
		},
		"part every manifest uses": func(newest, prev snapshot.SnapshotInfo) string {
			return firstPart(newest, func(p string) bool { return hasPart(prev, p) })
		},
	}
	for i, kind := range []string{"newest manifest", "part only the newest uses", "part every manifest uses"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			l := newLedger()
			mc := startMain(t, dir, flags...)
			waitProbe(t, mc.Addr, nil, 30*time.Second)
			// Load for a while, then a short round that changes only the
			// newest tasks, so that older parts stay shared.
			loadAndKill(t, mc, l, 0, uint64(i), 1500*time.Millisecond)
			mc = startMain(t, dir, flags...)
			waitProbe(t, mc.Addr, nil, 30*time.Second)
			loadAndKill(t, mc, l, 1, uint64(i)+100, 300*time.Millisecond)

			newest, prev := newestManifests(t, dir)
			target := pick[kind](newest, prev)
			require.NotEmpty(t, target, "no %s among %+v and %+v", kind, newest.Parts, prev.Parts)
			flipBytes(t, filepath.Join(dir, target))
			fig.injected++

			if kind != "part every manifest uses" {
				mc := startMain(t, dir, flags...)
				waitProbe(t, mc.Addr, nil, 30*time.Second)
				require.Contains(t, mc.Output(), target, "no warning names the corrupt file")
				fig.lost += l.verify(t, mc.Addr, nil, false)
				// It keeps serving on the fallback: ids and versions go on.
				loadAndKill(t, mc, l, 2, uint64(i)+200, 300*time.Millisecond)
				mc = startMain(t, dir, flags...)
				waitProbe(t, mc.Addr, nil, 30*time.Second)
				fig.lost += l.verify(t, mc.Addr, nil, false)
				tally(fig, l)
				mc.Kill()
				return
			}
			bin := testbin.Build(t)
			p := testbin.Start(t, bin, nil, "maincontrol", "--listen", testbin.FreeAddr(t), "--data-dir", dir, "--log-level", "warn")
			_ = p.Wait(time.Minute)
			require.True(t, p.Exited(), "the main control runs on a lost part:\n%s", p.Output())
			require.NotZero(t, p.ExitCode(), "the main control started on a lost part:\n%s", p.Output())
			require.Contains(t, p.Output(), target)
			var out bytes.Buffer
			cmd := exec.Command(bin, "inspect", "--data-dir", dir)
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "inspect:\n%s", out.String())
			require.Equal(t, 1, exit.ExitCode(), "inspect:\n%s", out.String())
			require.Contains(t, out.String(), target)
			tally(fig, l)
			fig.note("a corrupt part every manifest uses stopped startup: %s", lastLine(p.Output()))
		})
	}
}

// tally adds the ledger's submits sent and confirmed, and its tasks with
// more than one accepted result, to fig.
func tally(fig *figure, l *ledger) {
	fig.duplicates += l.duplicates()
	l.mu.Lock()
	defer l.mu.Unlock()
	fig.tasks += l.sent
	fig.confirmed += len(l.submitted)
}

// firstPart returns the first part of s that keep accepts, or "".
func firstPart(s snapshot.SnapshotInfo, keep func(string) bool) string {
	for _, p := range s.Parts {
		if keep(p.Name) {
			return p.Name
		}
	}
	return ""
}

func hasPart(s snapshot.SnapshotInfo, name string) bool {
	return slices.ContainsFunc(s.Parts, func(p snapshot.PartInfo) bool { return p.Name == name })
}

// inspectJSON reads dir with `apollo11 inspect --json`.
// newestManifests returns the two newest valid manifests of dir that
// list parts, newest first.
func newestManifests(t testing.TB, dir string) (newest, prev snapshot.SnapshotInfo) {
	t.Helper()
	info := inspectJSON(t, dir)
	var manifests []snapshot.SnapshotInfo
	for _, s := range info.Snapshots {
		if s.Valid && len(s.Parts) > 0 {
			manifests = append(manifests, s)
		}
	}
	require.GreaterOrEqual(t, len(manifests), 2, "valid manifests in %+v", info.Snapshots)
	return manifests[len(manifests)-1], manifests[len(manifests)-2]
}

func inspectJSON(t testing.TB, dir string) snapshot.DirInfo {
	t.Helper()
	out, err := exec.Command(testbin.Build(t), "inspect", "--json", "--data-dir", dir).Output()
	require.NoError(t, err, "inspect: %s", out)
	var rep struct {
		Dir snapshot.DirInfo `json:"dir"`
	}
	require.NoError(t, json.Unmarshal(out, &rep))
	return rep.Dir
}

// flipBytes inverts 8 bytes in the middle of a file.
func flipBytes(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 16, "%s is too short to corrupt", path)
	for i := len(b) / 2; i < len(b)/2+8; i++ {
		b[i] ^= 0xff
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

func lastLine(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if i := bytes.LastIndexByte([]byte(s), '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
