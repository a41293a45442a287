package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger routes Raft's hclog lines into slog, at their level, but
// for the errors that normal leadership changes and shutdowns make.
func newHCLogger(l *slog.Logger) hclog.Logger {
	level := hclog.Info
	if !l.Enabled(context.Background(), slog.LevelInfo) {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, Output: newSlogWriter(l, time.Now), DisableTime: true})
}

// peerLogEvery is how often a peer's repeated connection errors are
// logged. While a member is down Raft retries it several times a second,
// and each failure is a line: thousands an hour that bury the rest.
const peerLogEvery = 30 * time.Second

type slogWriter struct {
	l   *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	peers map[string]*peerLog // by the peer's raft address
}

// peerLog is what was logged about one peer's connection errors.
type peerLog struct {
	at         time.Time // when the last line was logged
	suppressed int       // lines not logged since
}

func newSlogWriter(l *slog.Logger, now func() time.Time) *slogWriter {
	return &slogWriter{l: l, now: now, peers: make(map[string]*peerLog)}
}

func (w *slogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	switch {
	case bytes.Contains(p, []byte("[ERROR]")):
		level = slog.LevelError
		if benignError(line) {
			level = slog.LevelWarn
		}
	case bytes.Contains(p, []byte("[WARN]")):
		level = slog.LevelWarn
	case bytes.Contains(p, []byte("[DEBUG]")), bytes.Contains(p, []byte("[TRACE]")):
		level = slog.LevelDebug
	}
	args := []any{"line", line}
	if level >= slog.LevelWarn && containsAny(line, peerMessages) {
		suppressed, ok := w.peerDue(peerOf(line))
		if !ok {
			return len(p), nil
		}
		if suppressed > 0 {
			args = append(args, "suppressed", suppressed, "within", peerLogEvery)
		}
	}
	w.l.Log(context.Background(), level, "raft", args...)
	return len(p), nil
}

// peerDue says whether a connection error about peer is logged now: the
// first one is, then at most one each peerLogEvery, with the count of
// those left out since.
func (w *slogWriter) peerDue(peer string) (suppressed int, due bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	pl, ok := w.peers[peer]
	if !ok {
		w.peers[peer] = &peerLog{at: now}
		return 0, true
	}
	if now.Sub(pl.at) < peerLogEvery {
		pl.suppressed++
		return 0, false
	}
	suppressed = pl.suppressed
	pl.at, pl.suppressed = now, 0
	return suppressed, true
}

// peerOf returns the raft address in a line's peer= field. Raft writes
// either peer=ADDR or peer="{Voter ID ADDR}".
func peerOf(line string) string {
	_, v, ok := strings.Cut(line, "peer=")
	if !ok {
		return ""
	}
	if rest, quoted := strings.CutPrefix(v, `"`); quoted {
		v, _, _ = strings.Cut(rest, `"`)
	} else {
		v, _, _ = strings.Cut(v, " ")
	}
	if inner, braced := strings.CutPrefix(v, "{"); braced {
		f := strings.Fields(strings.TrimSuffix(inner, "}"))
		if len(f) > 0 {
			return f[len(f)-1]
		}
	}
	return v
}

// peerMessages are Raft's errors about one connection to a peer.
var peerMessages = []string{
	"failed to appendEntries to", "failed to heartbeat to", "failed to pipeline appendEntries",
	"failed to start pipeline replication to", "failed to make requestVote RPC",
	"failed to decode incoming command",
}

// lostConn are the causes that say a peer's connection closed: the
// peer stopped or restarted, or this member is shutting down.
var lostConn = []string{
	"error=EOF", "transport shutdown", "use of closed network connection",
	"connection reset by peer", "broken pipe",
}

// benignError reports whether a Raft ERROR line is part of a normal
// leadership change or shutdown. A leader that meets a newer term steps
// down, as a transfer asks. A connection closed by a stopping peer is
// dialled again. A refused dial, or a storage error, stays an error.
func benignError(line string) bool {
	if strings.Contains(line, "peer has newer term, stopping replication") {
		return true
	}
	return containsAny(line, peerMessages) && containsAny(line, lostConn)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
