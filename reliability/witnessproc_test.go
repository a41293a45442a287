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

// witnessReport is what the witness process hands back at its end.
type witnessReport struct {
	Lat      []time.Duration
	Failed   int
	RowMax   int
	Err      string
	Confirms []witnessConfirm
}

type witnessConfirm struct {
	Key string
	ID  uint64
	Dup bool
}

// witnessProc is a witness process; stop ends it.
type witnessProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   string
	l     *ledger
	err   error // a start that failed
}

// startWitness starts this test binary as a witness of addr. Its
// confirmed submits go to l when it stops.
func startWitness(addr string, token []byte, l *ledger, kind witnessKind) *witnessProc {
	dir, err := os.MkdirTemp("", "apollo11-witness-")
	if err != nil {
		return &witnessProc{err: err}
	}
	w := &witnessProc{l: l, out: filepath.Join(dir, "report.json")}
	w.cmd = exec.Command(os.Args[0], "-test.run=^TestWitnessProcess$", "-test.count=1")
	w.cmd.Env = append(os.Environ(), witnessEnv+"="+strings.Join([]string{addr, hex.EncodeToString(token),
		fmt.Sprint(kind.fresh), kind.healthz, w.out}, "\n"))
	w.cmd.Stderr = os.Stderr
	if w.stdin, err = w.cmd.StdinPipe(); err == nil {
		err = w.cmd.Start()
	}
	w.err = err
	return w
}

// stop ends the witness and returns its round trips, how many failed,
// the most that failed in a row and the last error.
func (w *witnessProc) stop() ([]time.Duration, int, int, error) {
	if w.err != nil {
		return nil, 0, 0, fmt.Errorf("witness process: %w", w.err)
	}
	defer os.RemoveAll(filepath.Dir(w.out))
	w.stdin.Close() // its end: the witness finishes its request and reports
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, 0, 0, fmt.Errorf("witness process: %w", err)
		}
	case <-time.After(2 * witnessTimeout):
		_ = w.cmd.Process.Kill()
		<-done
		return nil, 0, 0, errors.New("witness process did not stop")
	}
	b, err := os.ReadFile(w.out)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("witness report: %w", err)
	}
	var rep witnessReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, 0, 0, fmt.Errorf("witness report: %w", err)
	}
	for _, c := range rep.Confirms {
		w.l.confirm(c.Key, c.ID, c.Dup)
	}
	var last error
	if rep.Err != "" {
		last = errors.New(rep.Err)
	}
	return rep.Lat, rep.Failed, rep.RowMax, last
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
	var rep witnessReport
	confirm := func(key string, id uint64, dup bool) {
		rep.Confirms = append(rep.Confirms, witnessConfirm{key, id, dup}) // the witness's own goroutine
	}
	w := newWitness(f[0], token, confirm, witnessKind{fresh: f[2] == "true", healthz: f[3]})
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	var last error
	rep.Lat, rep.Failed, rep.RowMax, last = w.stop()
	if last != nil {
		rep.Err = last.Error()
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f[4], b, 0o600); err != nil {
		t.Fatal(err)
	}
}
