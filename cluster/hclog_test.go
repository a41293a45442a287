package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

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
		w := newSlogWriter(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), time.Now)
		_, err := w.Write([]byte(tc.line + "\n"))
		assert.NoError(t, err)
		assert.True(t, strings.Contains(buf.String(), "level="+tc.want+" "), "%s: %s", tc.line, buf.String())
	}
}

// While a member is down, Raft logs a failed dial to it several times a
// second. Each peer's first one is logged at its level, then at most one
// each peerLogEvery, with the count left out. Other peers and other lines
// are not held back.
func TestHCLog_PeerErrorsAreRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	w := newSlogWriter(slog.New(slog.NewTextHandler(&buf, nil)), func() time.Time { return now })
	write := func(line string) {
		_, err := w.Write([]byte(line + "\n"))
		assert.NoError(t, err)
	}
	hb := `[ERROR] raft: failed to heartbeat to: peer=127.0.0.1:32970 backoff time=200ms error="dial tcp 127.0.0.1:32970: connect: connection refused"`
	ae := `[ERROR] raft: failed to appendEntries to: peer="{Voter 127.0.0.1:31970 127.0.0.1:32970}" error="dial tcp 127.0.0.1:32970: connect: connection refused"`
	other := `[ERROR] raft: failed to heartbeat to: peer=127.0.0.1:32971 backoff time=200ms error="dial tcp 127.0.0.1:32971: connect: connection refused"`
	for i := range 100 { // 20 s at 5 a second
		write(hb)
		write(ae)
		now = now.Add(200 * time.Millisecond)
		if i == 50 {
			write(other)
			write(`[INFO]  raft: entering leader state`)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if assert.Len(t, lines, 3, buf.String()) {
		assert.Contains(t, lines[0], "level=ERROR")
		assert.Contains(t, lines[0], "failed to heartbeat to: peer=127.0.0.1:32970")
		assert.NotContains(t, lines[0], "suppressed")
		assert.Contains(t, lines[1], "peer=127.0.0.1:32971", "another peer has its own count")
		assert.Contains(t, lines[2], "entering leader state")
	}
	buf.Reset()
	now = now.Add(10 * time.Second) // 30 s after the first
	write(ae)
	assert.Contains(t, buf.String(), "level=ERROR")
	assert.Contains(t, buf.String(), "failed to appendEntries to")
	assert.Contains(t, buf.String(), "suppressed=199 within=30s", "the lines left out are counted")
	buf.Reset()
	write(hb)
	assert.Empty(t, buf.String())
}
