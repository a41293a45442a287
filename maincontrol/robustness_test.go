package maincontrol_test

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
)

// Random, mostly well-formed payloads from clients and executors: every
// one is answered or refused, the connection then either still answers or
// was closed, and the server keeps serving. A panic or a hang fails it.

var (
	fuzzTypes = []string{"submit", "query", "cancel", "list", "stats", "state_get", "debug", "hello", "register",
		"heartbeat", "started", "progress", "result", "bye", "task", "welcome", "error", "done", "zz"}
	fuzzKeys = []string{"req", "task_type", "task_id", "version", "priority", "max_attempts", "timeout_ms",
		"delay_ms", "key", "trace_id", "depends_on", "wait", "state", "limit", "after", "keys", "on", "seq",
		"running", "status", "retryable", "error", "percent", "note", "arg.a", "out.o", "state.set.s",
		"state.add.n", "executor_id", "task_types", "slots", "proto", "auth"}
	fuzzValues = []string{"", "0", "1", "2", "9", "10", "01", "-1", "+1", "true", "false", "TRUE", "t",
		"succeeded", "failed", "pending", "running", "1,2", "1,,2", "1.1", "1.1,2.1", "x", "\\e", "\\n", "\\\\",
		"18446744073709551615", "18446744073709551616", "9223372036854775807", "-9223372036854775808",
		"é", strings.Repeat("z", 70), "1000", "1001", "65536", "65537"}
)

func fuzzPayload(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString("type=" + fuzzTypes[rng.IntN(len(fuzzTypes))])
	used := map[string]bool{}
	for i := rng.IntN(8); i > 0; i-- {
		k := fuzzKeys[rng.IntN(len(fuzzKeys))]
		if used[k] {
			continue
		}
		used[k] = true
		b.WriteString("\n" + k + "=" + fuzzValues[rng.IntN(len(fuzzValues))])
	}
	p := b.String()
	if rng.IntN(10) == 0 { // now and then, break it
		i := rng.IntN(len(p) + 1)
		p = p[:i] + []string{"\n", "=", "\\", "\xff", "A", "\n\n"}[rng.IntN(6)] + p[i:]
	}
	return p
}

func TestRobustness_RandomPayloads(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{StartTimeout: time.Hour}})
	ex := executorPeer(t, addr, "worker", "x", 4)
	seeder := clientPeer(t, addr)
	for i := 0; i < 5; i++ {
		seeder.submit("s", "task_type", "x")
	}
	for i := 0; i < 4; i++ {
		ex.expectTask(0)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		var p *rawPeer
		var alive func()
		if i%2 == 0 {
			p = clientPeer(t, addr)
			alive = func() { p.send("stats", "req", "probe") }
		} else {
			p = executorPeer(t, addr, "fz-"+strconv.Itoa(i), "x", 1)
			alive = func() { p.send("heartbeat", "seq", "424242", "running", "") }
		}
		payload := fuzzPayload(rng)
		p.sendPayload(payload)
		alive()
		require.NoError(t, p.c.SetReadDeadline(time.Now().Add(5*time.Second)))
		for {
			m, err := p.r.ReadMessage()
			if err != nil {
				var ne net.Error
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "no answer to %q", payload)
				break // closed
			}
			if m.Value("req") == "probe" && m.Type() == "stats" || m.Type() == "pong" && m.Value("seq") == "424242" {
				break // still open and in sync
			}
		}
		_ = p.c.Close()
	}
	seeder.alive("still serving")
	ex.send("heartbeat", "seq", "1", "running", "")
	for m := ex.recv(); m.Type() != "pong"; m = ex.recv() {
		require.Equal(t, "cancel", m.Type(), "got %s", m) // a fuzzed client cancelled its task
	}
}
