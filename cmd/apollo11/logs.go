package main

import (
	"io"
	"log/slog"
	"time"

	"github.com/apollo11/apollo11/internal/logsink"
)

// sinkCloseTimeout is how long a daemon's exit waits for its last lines
// ("stopped") to reach stderr. It is long enough for any reader that
// reads, and short enough that a stuck one does not hold the exit.
const sinkCloseTimeout = 2 * time.Second

// daemonSink puts a daemon's stderr behind a logsink.Sink. So a stderr
// nobody reads never stops the daemon (see package logsink). Its notice
// of dropped records is a record of the daemon's own format, so a JSON
// log stays JSON. The flags are checked when the daemon builds its
// logger, before any record can be dropped.
func (l *logFlags) daemonSink(stderr io.Writer) *logsink.Sink {
	return logsink.New(stderr, logsink.Options{Notice: logsink.SlogNotice(func(w io.Writer) slog.Handler {
		h, err := l.handler(w)
		if err != nil { // not reached: no logger, no record to drop
			return slog.NewTextHandler(w, nil)
		}
		return h
	})})
}

// closeSink writes out what the daemon logged last, waiting at most
// sinkCloseTimeout.
func closeSink(s *logsink.Sink) {
	_ = s.Close(sinkCloseTimeout) // a stuck stderr has nowhere to be told
}
