package core

import (
	"context"
	"log/slog"
)

// logLimit lets at most logsPerSecond records of one kind through each
// second of the core's clock. So a peer repeating what is logged, such as
// registering and leaving in a loop, cannot fill the log. allow reports
// how many were held back since the last one let through.
type logLimit struct {
	sec  int64
	n    int
	held int
}

const logsPerSecond = 20

func (l *logLimit) allow(nowMs int64) (bool, int) {
	if s := nowMs / 1000; s != l.sec {
		l.sec, l.n = s, 0
	}
	if l.n >= logsPerSecond {
		l.held++
		return false, 0
	}
	l.n++
	held := l.held
	l.held = 0
	return true, held
}

// logLimited logs at level, within execLog's share. A record after some
// were held back says how many.
func (c *Core) logLimited(level slog.Level, msg string, args ...any) {
	ok, held := c.execLog.allow(c.now())
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "logs_suppressed", held)
	}
	c.log.Log(context.Background(), level, msg, args...)
}
