package cluster

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger routes Raft's hclog lines into slog, at their level.
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
	case bytes.Contains(p, []byte("[WARN]")):
		level = slog.LevelWarn
	case bytes.Contains(p, []byte("[DEBUG]")), bytes.Contains(p, []byte("[TRACE]")):
		level = slog.LevelDebug
	}
	w.l.Log(context.Background(), level, "raft", "line", line)
	return len(p), nil
}
