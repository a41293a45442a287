package reliability_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The witness runs in a process of its own, as an honest client does. In
// the attackers' process it shared their Go scheduler, and its round
// trips also timed their goroutines decoding a flood of replies.
const witnessEnv = "APOLLO11_WITNESS"

// witnessReport is what the witness process hands back at its end. Its
// confirmed submits go to a file of their own as they come, so that a
// killed witness loses none.
type witnessReport struct {
	Lat    []time.Duration
	Failed int
	RowMax int
	Err    string
}

type witnessConfirm struct {
	Key string
	ID  uint64
	Dup bool
}

// errWitnessProcess is a witness process that failed or had to be killed:
// its round trips are unknown, and the attack's row with them.
var errWitnessProcess = errors.New("witness process failed")

// witnessGrace is how long a stopped witness may take to finish its
// request: a dial, a hello and a request, each within witnessTimeout.
const witnessGrace = 4 * witnessTimeout

// witnessProc is a witness process; stop ends it.
type witnessProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	dir     string
	l       *ledger
	done    chan error // the process's exit
	stopped bool
}

// startWitness starts this test binary as a witness of addr. Its
// confirmed submits go to l; the test's cleanup ends it if stop did not.
func startWitness(t *testing.T, addr string, token []byte, l *ledger, kind witnessKind) *witnessProc {
	t.Helper()
	w := &witnessProc{l: l, dir: t.TempDir(), done: make(chan error, 1)}
	w.cmd = exec.Command(os.Args[0], "-test.run=^TestWitnessProcess$", "-test.count=1")
	w.cmd.Env = append(os.Environ(), witnessEnv+"="+strings.Join([]string{addr, hex.EncodeToString(token),
		fmt.Sprint(kind.fresh), kind.healthz, w.dir}, "\n"))
	out, err := os.Create(filepath.Join(w.dir, "output")) // a failed witness says why there
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child holds its own descriptor
	w.cmd.Stdout, w.cmd.Stderr = out, out
	stdin, err := w.cmd.StdinPipe()
	if err == nil {
		err = w.cmd.Start()
	}
	if err != nil {
		t.Fatalf("cannot start the witness process: %v", err)
	}
	w.stdin = stdin
	go func() { w.done <- w.cmd.Wait() }()
	t.Cleanup(func() {
		if !w.stopped {
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// stop ends the witness and returns its round trips, how many failed,
// the most that failed in a row and the last error. A witness process
// that failed returns errWitnessProcess, which fails the attack.
func (w *witnessProc) stop() ([]time.Duration, int, int, error) {
	w.stopped = true
	w.stdin.Close() // its end: the witness finishes its request and reports
	var exit error
	select {
	case exit = <-w.done:
	case <-time.After(witnessGrace):
		_ = w.cmd.Process.Kill()
		<-w.done
		exit = fmt.Errorf("it did not stop within %v", witnessGrace)
	}
	confirmErr := w.takeConfirms()
	if exit != nil {
		said, _ := os.ReadFile(filepath.Join(w.dir, "output"))
		return nil, 0, 0, fmt.Errorf("%w: %v; it said: %s", errWitnessProcess, exit, lastLines(string(said), 10))
	}
	if confirmErr != nil {
		return nil, 0, 0, fmt.Errorf("%w: %v", errWitnessProcess, confirmErr)
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "report.json"))
	var rep witnessReport
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: its report: %v", errWitnessProcess, err)
	}
	var last error
	if rep.Err != "" {
		last = errors.New(rep.Err)
	}
	return rep.Lat, rep.Failed, rep.RowMax, last
}

// takeConfirms hands the submits the witness saw confirmed to the ledger.
// A line cut short by a kill confirmed nothing the ledger must hold.
func (w *witnessProc) takeConfirms() error {
	b, err := os.ReadFile(filepath.Join(w.dir, "confirms.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		var c witnessConfirm
		if line == "" || json.Unmarshal([]byte(line), &c) != nil {
			continue
		}
		w.l.confirm(c.Key, c.ID, c.Dup)
	}
	return nil
}

// TestWitnessProcess is the witness process's body; it skips unless
// startWitness ran it.
func TestWitnessProcess(t *testing.T) {
	env := os.Getenv(witnessEnv)
	if env == "" {
		t.Skip("run by startWitness")
	}
	f := strings.Split(env, "\n")
	if len(f) != 5 {
		t.Fatalf("%s: want 5 lines, got %d", witnessEnv, len(f))
	}
	token, err := hex.DecodeString(f[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(token) == 0 {
		token = nil
	}
	confirms, err := os.OpenFile(filepath.Join(f[4], "confirms.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer confirms.Close()
	confirm := func(key string, id uint64, dup bool) { // the witness's own goroutine
		b, _ := json.Marshal(witnessConfirm{key, id, dup})
		if _, err := confirms.Write(append(b, '\n')); err != nil {
			t.Error(err)
		}
	}
	w := newWitness(f[0], token, confirm, witnessKind{fresh: f[2] == "true", healthz: f[3]})
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	var rep witnessReport
	var last error
	rep.Lat, rep.Failed, rep.RowMax, last = w.stop()
	if last != nil {
		rep.Err = last.Error()
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f[4], "report.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
