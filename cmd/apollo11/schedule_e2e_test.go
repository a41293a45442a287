package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// schedCLI runs `apollo11 schedule SUB --addr addr ARGS...`.
func schedCLI(t *testing.T, bin, addr, sub string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"schedule", sub, "--addr", addr}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "run schedule %s %v: %v", sub, args, err)
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// fireTimes maps each fire time of schedule name to the tasks that carry
// its fire key as their trace id, over every task the main control keeps.
func fireTimes(t *testing.T, addr, name string) map[int64]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Scale(20*time.Second))
	defer cancel()
	cl, err := client.Dial(ctx, addr, client.Options{})
	require.NoError(t, err)
	defer cl.Close()
	out := map[int64]int{}
	// A task that moves on between two lists shows up in both: it is
	// counted once.
	seen := map[uint64]bool{}
	for _, st := range []string{"waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled"} {
		ids, err := cl.ListAll(ctx, st)
		require.NoError(t, err)
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			ts, err := cl.Query(ctx, id)
			require.NoError(t, err)
			at, ok := strings.CutPrefix(ts.TraceID, "sched:"+name+":")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(at, 10, 64)
			require.NoError(t, err, "trace id %q", ts.TraceID)
			out[n]++
		}
	}
	return out
}

// waitFired waits until schedule name has fired at the fire time at.
func waitFired(t *testing.T, addr, name string, at int64, within time.Duration) map[int64]int {
	t.Helper()
	var last map[int64]int
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if last = fireTimes(t, addr, name); last[at] > 0 {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("schedule %s did not fire at %d in time; fired: %v", name, at, last)
	return nil
}

// waitLastFire polls `schedule list` until schedule name shows last_fire
// at: the firing of at is recorded, on the first try or by a re-fire.
func waitLastFire(t *testing.T, bin, addr, name string, at int64, within time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, errOut, code := schedCLI(t, bin, addr, "list", name, "--json")
		require.Equal(t, 0, code, errOut)
		var list []client.Schedule
		require.NoError(t, json.Unmarshal([]byte(out), &list), out)
		if len(list) == 1 && list[0].LastFire.Unix() == at {
			return
		}
		last = out
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("schedule %s did not record last_fire %d in time; list: %s", name, at, last)
}

// TestCLI_ScheduleCommands drives the schedule commands on the real
// binary with a seconds schedule: it fires, survives kill -9 with no fire
// time twice, pauses, resumes and is deleted; errors are JSON under --json.
func TestCLI_ScheduleCommands(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	startExecutor(t, bin, mc.Addr, "--id", "sched-1", "--types", "echo", "--slots", "2")

	out, errOut, code := schedCLI(t, bin, mc.Addr, "add", "tick", "--cron", "*/2 * * * * *", "--type", "echo", "--arg", "msg=hi", "--json")
	require.Equal(t, 0, code, errOut)
	var added struct {
		Name      string    `json:"name"`
		NextFire  time.Time `json:"next_fire"`
		Duplicate bool      `json:"duplicate"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	assert.Equal(t, "tick", added.Name)
	assert.False(t, added.Duplicate)
	first := added.NextFire.Unix()
	out, errOut, code = schedCLI(t, bin, mc.Addr, "add", "tick", "--cron", "*/2 * * * * *", "--type", "echo", "--arg", "msg=hi")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "schedule tick exists already, the same")

	waitFired(t, mc.Addr, "tick", first+2, patience.Scale(20*time.Second))
	mc.Signal(syscall.SIGKILL)
	require.Error(t, mc.Wait(20*time.Second))
	mc2 := testbin.Start(t, bin, nil, "maincontrol", "--listen", mc.Addr, "--data-dir", dir)
	require.NoError(t, testbin.WaitWelcome(mc.Addr, 20*time.Second, nil), mc2.Output())
	// The fire times of the downtime are passed over (a 2 s schedule is
	// late after 1 s); the firings go on from a time after the restart.
	next := time.Now().Unix()/2*2 + 4
	fired := waitFired(t, mc.Addr, "tick", next, patience.Scale(20*time.Second))
	for at, n := range fired {
		assert.Equal(t, 1, n, "fire time %d made %d tasks", at, n)
		assert.Zero(t, (at-first)%2, "fire time %d is not on the schedule", at)
	}

	out, errOut, code = schedCLI(t, bin, mc.Addr, "list", "--json")
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 1)
	assert.Equal(t, "tick", list[0]["name"])
	assert.Equal(t, "echo", list[0]["task_type"])
	assert.GreaterOrEqual(t, list[0]["fires"].(float64), float64(len(fired)))
	out, _, code = schedCLI(t, bin, mc.Addr, "list")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^tick\s+\*/2 \* \* \* \* \*\s+UTC\s+active\s+\d+\s+\S+\s+\S+\s+0s\s+skip\s+echo$`, out)

	out, errOut, code = schedCLI(t, bin, mc.Addr, "pause", "tick")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule tick paused\n", out)
	out, _, _ = schedCLI(t, bin, mc.Addr, "pause", "tick")
	assert.Equal(t, "schedule tick was already paused\n", out)
	out, _, code = schedCLI(t, bin, mc.Addr, "resume", "tick", "--json")
	require.Equal(t, 0, code)
	assert.JSONEq(t, `{"name":"tick","resumed":true,"changed":true}`, out)
	out, errOut, code = schedCLI(t, bin, mc.Addr, "delete", "tick")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule tick deleted\n", out)
	out, _, _ = schedCLI(t, bin, mc.Addr, "list")
	assert.Equal(t, "no schedules\n", out)

	_, errOut, code = schedCLI(t, bin, mc.Addr, "add", "bad", "--cron", "61 * * * *", "--type", "echo", "--json")
	assert.Equal(t, 1, code)
	var je struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(errOut), &je), errOut)
	assert.Equal(t, "bad_request", je.Error.Code)
	assert.Contains(t, je.Error.Message, "cron")
	_, errOut, code = schedCLI(t, bin, mc.Addr, "delete", "tick")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `no schedule named "tick"`)
	_, errOut, code = schedCLI(t, bin, mc.Addr, "add", "x", "--type", "echo")
	assert.Equal(t, 2, code, "a bad command line")
	assert.Contains(t, errOut, "--cron is required")
}

// TestCLI_ScheduleEveryMinuteAcrossKill9 is the end to end: a */1
// schedule on the real binary fires once per minute, and a kill -9 that
// spans a fire time neither loses it nor fires any time twice. It takes
// two to three minutes of real time, so it runs with the load tests.
func TestCLI_ScheduleEveryMinuteAcrossKill9(t *testing.T) {
	patience.LoadTests(t)
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	startExecutor(t, bin, mc.Addr, "--id", "minute-1", "--types", "echo", "--slots", "2")
	out, errOut, code := schedCLI(t, bin, mc.Addr, "add", "minute", "--cron", "*/1 * * * *", "--type", "echo", "--json")
	require.Equal(t, 0, code, errOut)
	var added struct {
		NextFire time.Time `json:"next_fire"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	m1 := added.NextFire.Unix()
	require.Zero(t, m1%60)
	waitFired(t, mc.Addr, "minute", m1, time.Until(time.Unix(m1, 0))+patience.Scale(20*time.Second))

	// Killed a second before the next fire time, back after it: the
	// restart fires it, once (it is on time: up to 30 s late).
	m2 := m1 + 60
	time.Sleep(time.Until(time.Unix(m2-1, 0)))
	mc.Signal(syscall.SIGKILL)
	require.Error(t, mc.Wait(20*time.Second))
	time.Sleep(time.Until(time.Unix(m2, 500_000_000)))
	mc2 := testbin.Start(t, bin, nil, "maincontrol", "--listen", mc.Addr, "--data-dir", dir)
	require.NoError(t, testbin.WaitWelcome(mc.Addr, 20*time.Second, nil), mc2.Output())
	fired := waitFired(t, mc.Addr, "minute", m2, patience.Scale(20*time.Second))
	assert.Equal(t, map[int64]int{m1: 1, m2: 1}, fired, "each minute once, none twice")

	// Killed again just after a firing, the fire record perhaps not yet
	// durable: the restart finds the task by its key and makes no other.
	m3 := m2 + 60
	fired = waitFired(t, mc.Addr, "minute", m3, time.Until(time.Unix(m3, 0))+patience.Scale(20*time.Second))
	mc2.Signal(syscall.SIGKILL)
	require.Error(t, mc2.Wait(20*time.Second))
	mc3 := testbin.Start(t, bin, nil, "maincontrol", "--listen", mc.Addr, "--data-dir", dir)
	require.NoError(t, testbin.WaitWelcome(mc.Addr, 20*time.Second, nil), mc3.Output())
	// The restart re-fires m3 unless its fire record was durable: either
	// way last_fire shows m3 once that is settled, and only then count.
	waitLastFire(t, bin, mc.Addr, "minute", m3, patience.Scale(20*time.Second))
	fired = fireTimes(t, mc.Addr, "minute")
	assert.Equal(t, map[int64]int{m1: 1, m2: 1, m3: 1}, fired, "each minute once, none twice")
	out, _, code = schedCLI(t, bin, mc.Addr, "list", "minute", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"fires": 3`)
}

// schedule add --pipeline: each firing submits the file as one run,
// every task of it traced by the fire key.
func TestCLI_SchedulePipeline(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", t.TempDir())
	startExecutor(t, bin, mc.Addr, "--id", "sched-p", "--types", "echo", "--slots", "2")
	file := filepath.Join(t.TempDir(), "etl.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: etl\nkey: etl-${day}\nvars:\n  day: today\nsteps:\n"+
		"  - id: fetch\n    type: echo\n    args: {day: \"${day}\"}\n"+
		"  - id: load\n    type: echo\n    depends_on: [fetch]\n    args: {got: \"${steps.fetch.out.day}\"}\n"), 0o600))
	out, errOut, code := schedCLI(t, bin, mc.Addr, "add", "etl", "--cron", "*/2 * * * * *", "--pipeline", file, "--var", "day=mon", "--json")
	require.Equal(t, 0, code, errOut)
	var added struct {
		NextFire time.Time `json:"next_fire"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	fired := waitFired(t, mc.Addr, "etl", added.NextFire.Unix(), patience.Scale(20*time.Second))
	assert.Equal(t, 2, fired[added.NextFire.Unix()], "both steps of the run carry the fire key")
	out, _, code = schedCLI(t, bin, mc.Addr, "list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "run etl")

	_, errOut, code = schedCLI(t, bin, mc.Addr, "add", "x", "--cron", "@daily", "--pipeline", file, "--type", "echo")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "not both")
	_, errOut, code = schedCLI(t, bin, mc.Addr, "add", "x", "--cron", "@daily", "--pipeline", file, "--var", "nope=1")
	assert.Equal(t, 2, code, errOut)
	_, errOut, code = schedCLI(t, bin, mc.Addr, "add", "x", "--cron", "@daily", "--pipeline", filepath.Join(t.TempDir(), "missing.yaml"))
	assert.Equal(t, 1, code, errOut)
}
