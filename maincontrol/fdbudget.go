package maincontrol

import (
	"context"
	"fmt"
	"log/slog"
)

// httpMaxConns bounds the metrics port's connections: a scraper needs one
// or two, and each one is a file descriptor the main port may need.
const httpMaxConns = 32

// listenBacklog returns the main port's listen backlog for an open-file
// limit (see limitBacklog): a quarter of the limit, from 128 to 4096 (the
// usual somaxconn), or 0 (leave it) when the limit is unknown. gnet's
// acceptor takes every connection waiting in the backlog at once, each
// with a descriptor, before --max-conns refuses any; but a fleet of
// clients reconnecting after a restart needs a deep one.
func listenBacklog(limit uint64) int {
	if limit == 0 {
		return 0
	}
	return int(min(max(limit/4, 128), 4096))
}

// fdReserve is the file descriptors the main control needs besides its
// peers' connections: the listeners, each event loop's epoll and eventfd,
// the log's segment and directory, a snapshot being written and the one
// being read, the lock file, the HTTP port's connections, stdio and the Go
// runtime's own, and a backlog's worth of connections accepted only to be
// refused.
func fdReserve(eventLoops, backlog int) int { return 64 + 2*eventLoops + httpMaxConns + backlog }

// fitMaxConns lowers maxConns so that every connection it allows, and the
// descriptors the main control needs besides, fit in the open-file limit
// (limit 0: unknown), and returns it with the listen backlog to set (0:
// leave it). gnet stops its whole engine when accept fails with EMFILE,
// so a --max-conns the limit cannot hold would let any local user stop
// the state authority by opening connections. A limit that leaves fewer
// than minConns connections is an error.
func fitMaxConns(maxConns, eventLoops int, limit uint64, log *slog.Logger) (fit, backlog int, err error) {
	const minConns = 16
	backlog = listenBacklog(limit)
	reserve := fdReserve(eventLoops, backlog)
	if limit == 0 || uint64(maxConns)+uint64(reserve) <= limit {
		return maxConns, backlog, nil
	}
	if limit < uint64(reserve+minConns) {
		return 0, 0, fmt.Errorf("the open-file limit %d leaves room for fewer than %d connections (the main control keeps %d descriptors for itself): raise it (ulimit -n, LimitNOFILE=)",
			limit, minConns, reserve)
	}
	fit = int(limit) - reserve
	level := slog.LevelWarn
	if maxConns == DefaultMaxConns {
		// Most hosts' limits are under the default: a warning at every
		// start would cry wolf. One set by the operator is worth it.
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, "--max-conns lowered to fit the open-file limit: raise the limit (ulimit -n, LimitNOFILE=) to allow more",
		"max_conns", maxConns, "lowered_to", fit, "open_file_limit", limit, "reserved", reserve)
	return fit, backlog, nil
}
