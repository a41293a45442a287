package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Raft's ERROR lines of a planned transfer and of a shutdown, as a clean
// dev --cluster 3 session logged them, come out as WARN. Errors that
// need a look (a member that cannot be dialled, a store that fails) stay
// ERROR.
func TestHCLog_BenignRaftErrorsAreWarnings(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string
	}{
		{`[ERROR] raft: peer has newer term, stopping replication: peer="{Voter 127.0.0.1:19852 127.0.0.1:20852}"`, "WARN"},
		{`[ERROR] raft: failed to decode incoming command: error="transport shutdown"`, "WARN"},
		{`[ERROR] raft: failed to appendEntries to: peer="{Voter 127.0.0.1:19852 127.0.0.1:20852}" error=EOF`, "WARN"},
		{`[ERROR] raft: failed to heartbeat to: peer=127.0.0.1:20851 backoff time=10ms error=EOF`, "WARN"},
		{`[ERROR] raft: failed to heartbeat to: peer=127.0.0.1:20851 error="read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"`, "WARN"},
		{`[ERROR] raft: failed to appendEntries to: peer="{Voter a b}" error="dial tcp 127.0.0.1:29802: connect: connection refused"`, "ERROR"},
		{`[ERROR] raft: failed to append to logs: error="unexpected EOF"`, "ERROR"},
		{`[ERROR] raft: failed to take snapshot: error=EOF`, "ERROR"},
		{`[WARN]  raft: heartbeat timeout reached, starting election`, "WARN"},
		{`[INFO]  raft: entering leader state`, "INFO"},
	} {
		var buf bytes.Buffer
		w := slogWriter{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		_, err := w.Write([]byte(tc.line + "\n"))
		assert.NoError(t, err)
		assert.True(t, strings.Contains(buf.String(), "level="+tc.want+" "), "%s: %s", tc.line, buf.String())
	}
}
