package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// runsEnv is a real main control with one executor of the built-in
// types, and a directory for pipeline files and run files.
type runsEnv struct {
	t        *testing.T
	bin, dir string
	addr     string
}

func startRunsEnv(t *testing.T) *runsEnv {
	t.Helper()
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "runs-1", "--types", "echo,fail,exec", "--slots", "4",
		"--allow-exec", "--exec-allow", "/bin/sh")
	return &runsEnv{t: t, bin: bin, dir: t.TempDir(), addr: mc.Addr}
}

// file writes a pipeline file and returns its path.
func (e *runsEnv) file(name, yaml string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	require.NoError(e.t, os.WriteFile(p, []byte(yaml), 0o644))
	return p
}

// pipeline runs `apollo11 pipeline SUB --addr ADDR args...` in the
// env's directory and returns stdout, stderr and the exit code.
func (e *runsEnv) pipeline(sub string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"pipeline", sub, "--addr", e.addr}, args...)...)
	cmd.Dir = e.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(e.t, ok, "pipeline %s %v: %v", sub, args, err)
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// runJSON is a run as `pipeline run|resume|status --json` prints it.
type runJSON struct {
	RunID   uint64 `json:"run_id"`
	State   string `json:"state"`
	Resumes uint64 `json:"resumes"`
	Resumed *struct {
		Requeued []string `json:"requeued"`
	} `json:"resumed"`
	Steps []struct {
		ID         string `json:"id"`
		TaskID     uint64 `json:"task_id"`
		State      string `json:"state"`
		Error      string `json:"error"`
		Optional   bool   `json:"optional"`
		CompTaskID uint64 `json:"comp_task_id"`
		CompState  string `json:"comp_state"`
	} `json:"steps"`
}

func (r runJSON) step(t *testing.T, id string) (taskID uint64, state, errText string) {
	t.Helper()
	for _, s := range r.Steps {
		if s.ID == id {
			return s.TaskID, s.State, s.Error
		}
	}
	t.Fatalf("no step %s in %+v", id, r)
	return 0, "", ""
}

func decodeRun(t *testing.T, out string) runJSON {
	t.Helper()
	var r runJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// task returns `status TASK --json` as a map.
func (e *runsEnv) task(id uint64) map[string]any {
	e.t.Helper()
	out, errOut, code := cli(e.t, e.bin, e.addr, "status", "--json", strconv.FormatUint(id, 10))
	require.Equal(e.t, 0, code, errOut)
	var m map[string]any
	require.NoError(e.t, json.Unmarshal([]byte(out), &m), out)
	return m
}

// A keyed 4-step run fails at step 3; the cause is fixed and the run is
// resumed: steps 1 and 2 keep their task ids and do not run again, step 2
// read step 1's output, and the run succeeds.
func TestE2E_RunResumeAfterFix(t *testing.T) {
	e := startRunsEnv(t)
	fixed := filepath.Join(e.dir, "fixed")
	file := e.file("resume.yaml", `
name: nightly
key: nightly-${day}
vars: {day: d1}
defaults: {max_attempts: 1}
steps:
  - {id: fetch, type: echo, args: {path: "/data/${day}.csv"}}
  - {id: parse, type: echo, depends_on: [fetch], args: {in: "rows of ${steps.fetch.out.path}"}}
  - id: check
    type: exec
    depends_on: [parse]
    args: {argv.0: /bin/sh, argv.1: -c, argv.2: "test -e `+fixed+`"}
  - {id: store, type: echo, depends_on: [check], args: {from: "${steps.parse.out.in}"}}
`)
	out, errOut, code := e.pipeline("run", file, "--wait", "--json")
	require.Equal(t, 1, code, "the run fails at step 3: %s%s", out, errOut)
	first := decodeRun(t, out)
	assert.Equal(t, "failed", first.State)
	fetchID, st, _ := first.step(t, "fetch")
	assert.Equal(t, "succeeded", st)
	parseID, st, _ := first.step(t, "parse")
	assert.Equal(t, "succeeded", st)
	_, st, errText := first.step(t, "check")
	assert.Equal(t, "failed", st)
	assert.Contains(t, errText, "exit status 1")
	_, st, _ = first.step(t, "store")
	assert.Equal(t, "cancelled", st, "cancelled by its failed dependency")

	parsed := e.task(parseID)
	assert.Equal(t, map[string]any{"in": "rows of /data/d1.csv"}, parsed["out"], "step 2 read step 1's output")
	before := map[uint64]map[string]any{fetchID: e.task(fetchID), parseID: parsed}

	// Running the file again without --resume returns the failed run.
	out, errOut, code = e.pipeline("run", file, "--json")
	require.Equal(t, 0, code, errOut)
	again := decodeRun(t, out)
	assert.Equal(t, first.RunID, again.RunID)
	assert.Contains(t, out, `"duplicate": true`)

	require.NoError(t, os.WriteFile(fixed, nil, 0o644)) // the cause is fixed
	out, errOut, code = e.pipeline("run", file, "--resume", "--wait", "--json")
	require.Equal(t, 0, code, "the resumed run succeeds: %s%s", out, errOut)
	done := decodeRun(t, out)
	assert.Equal(t, first.RunID, done.RunID, "the same run")
	assert.Equal(t, "succeeded", done.State)
	require.NotNil(t, done.Resumed)
	assert.Equal(t, []string{"check", "store"}, done.Resumed.Requeued, "only what failed or was cancelled")
	for _, s := range done.Steps {
		assert.Equal(t, "succeeded", s.State, s.ID)
		id, _, _ := first.step(t, s.ID)
		assert.Equal(t, id, s.TaskID, "step %s keeps its task id", s.ID)
	}
	for id, was := range before {
		now := e.task(id)
		assert.Equal(t, was["attempt"], now["attempt"], "task %d did not run again", id)
		assert.Equal(t, was["updated"], now["updated"], "task %d did not change", id)
		assert.Nil(t, now["requeues"], "task %d was never requeued", id)
	}
	storeID, _, _ := done.step(t, "store")
	assert.Equal(t, map[string]any{"from": "rows of /data/d1.csv"}, e.task(storeID)["out"], "outputs read through two steps")

	out, errOut, code = e.pipeline("status", "nightly-d1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "run "+strconv.FormatUint(first.RunID, 10)+" nightly (key nightly-d1): succeeded, resumed 1 time")

	// A succeeded run cannot be resumed: a JSON error, as other commands.
	_, errOut, code = e.pipeline("resume", strconv.FormatUint(first.RunID, 10), "--json")
	assert.Equal(t, 1, code)
	var je struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(errOut), &je), errOut)
	assert.Equal(t, "illegal_transition", je.Error.Code, errOut)
}

// A failed run compensates its succeeded steps in reverse order, each
// compensation reading its step's outputs, and ends rolled back.
func TestE2E_RunCompensation(t *testing.T) {
	e := startRunsEnv(t)
	file := e.file("comp.yaml", `
name: saga
defaults: {max_attempts: 1}
steps:
  - {id: book, type: echo, args: {ref: "b-1"}, compensate: {args: {undo: "${steps.book.out.ref}"}}}
  - {id: pay, type: echo, depends_on: [book], args: {ref: "p-1"}, compensate: {type: echo, args: {undo: "${steps.pay.out.ref}"}}}
  - {id: plain, type: echo, depends_on: [pay]}
  - {id: ship, type: fail, depends_on: [plain], args: {retryable: "false"}}
`)
	out, errOut, code := e.pipeline("run", file, "--wait", "--json")
	require.Equal(t, 1, code, "%s%s", out, errOut)
	r := decodeRun(t, out)
	assert.Equal(t, "rolled_back", r.State)
	comps := map[string]uint64{}
	for _, s := range r.Steps {
		switch s.ID {
		case "book", "pay":
			require.NotZero(t, s.CompTaskID, "step %s has a compensation", s.ID)
			assert.Equal(t, "succeeded", s.CompState, s.ID)
			comps[s.ID] = s.CompTaskID
		default:
			assert.Zero(t, s.CompTaskID, "step %s names no compensation", s.ID)
		}
	}
	book, pay := e.task(comps["book"]), e.task(comps["pay"])
	assert.Equal(t, map[string]any{"undo": "b-1"}, book["out"])
	assert.Equal(t, map[string]any{"undo": "p-1"}, pay["out"])
	// Reverse step order: pay's compensation is made first, and book's
	// waits for it to end.
	assert.Less(t, comps["pay"], comps["book"])
	assert.False(t, parseTime(t, book["updated"]).Before(parseTime(t, pay["updated"])), "book's compensation ends after pay's")
	assert.EqualValues(t, r.Steps[0].TaskID, book["rollback_of"], "the executor is told what to undo")
	assert.EqualValues(t, r.RunID, book["run_id"])
	assert.Equal(t, "book", book["step"])

	out, _, code = e.pipeline("status", strconv.FormatUint(r.RunID, 10))
	require.Equal(t, 0, code)
	assert.Contains(t, out, ": rolled_back")
	assert.Equal(t, 2, strings.Count(out, "  compensation "), out)
	_, errOut, code = e.pipeline("resume", strconv.FormatUint(r.RunID, 10))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "was rolled back", "a compensated run is not resumed")
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, "%v", v)
	return tm
}
