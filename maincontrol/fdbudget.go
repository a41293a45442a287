package maincontrol

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apollo11/apollo11/cluster"
)

// httpMaxConns bounds the metrics port's connections. A scraper needs one
// or two, and each one is a file descriptor the main port may need.
const httpMaxConns = 32

// fdReserve is the file descriptors the main control needs besides its
// peers' connections. They hold the listeners, each event loop's epoll and
// eventfd, and the log's segment and directory. They hold a snapshot being
// written and one being read, the lock files and the HTTP connections.
// Stdio and the Go runtime take some. So do the connections being handed
// to an event loop, with their duplicates (accept.go). A cluster member
// keeps its raft transport's too, so raft churn cannot take the main
// port's descriptors.
func fdReserve(eventLoops int, member bool) int {
	n := 64 + 2*eventLoops + httpMaxConns + 1 + 2*maxHandOvers
	if member {
		n += cluster.TransportFDs
	}
	return n
}

// fitMaxConns lowers maxConns so that every connection it allows, and the
// descriptors the main control needs besides, fit in the open-file limit.
// A limit of 0 is unknown. Past the limit, accept fails (EMFILE) and the
// acceptor waits and tries again. Newcomers then wait unanswered in the
// listen backlog. Within it, they are refused with a reason (refusal.go),
// and the log and snapshots keep their descriptors. A limit that leaves
// fewer than minConns connections is an error. A connection takes
// perConn descriptors: 1 in plaintext, tlsConnDescriptors over TLS.
// reserve is fdReserve's count.
func fitMaxConns(maxConns, perConn, reserve int, limit uint64, log *slog.Logger) (int, error) {
	const minConns = 16
	if limit == 0 || uint64(maxConns)*uint64(perConn)+uint64(reserve) <= limit {
		return maxConns, nil
	}
	if limit < uint64(reserve+minConns*perConn) {
		return 0, fmt.Errorf("the open-file limit %d leaves room for fewer than %d connections (the main control keeps %d descriptors for itself): raise it (ulimit -n, LimitNOFILE=)",
			limit, minConns, reserve)
	}
	fit := (int(limit) - reserve) / perConn
	level := slog.LevelWarn
	if maxConns == DefaultMaxConns {
		// Most hosts' limits are under the default: a warning at every
		// start would cry wolf. One set by the operator is worth it.
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, "--max-conns lowered to fit the open-file limit: raise the limit (ulimit -n, LimitNOFILE=) to allow more",
		"max_conns", maxConns, "lowered_to", fit, "open_file_limit", limit, "reserved", reserve)
	return fit, nil
}
