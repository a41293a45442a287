package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger routes Raft's hclog lines into slog, at their level, but
// for the errors that normal leadership changes and shutdowns make.
func newHCLogger(l *slog.Logger) hclog.Logger {
	level := hclog.Info
	if !l.Enabled(context.Background(), slog.LevelInfo) {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, Output: slogWriter{l}, DisableTime: true})
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
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
	w.l.Log(context.Background(), level, "raft", "line", line)
	return len(p), nil
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
