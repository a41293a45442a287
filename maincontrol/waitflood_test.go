package maincontrol_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// Two connections that each wait 65,536 times for one keyed task no
// executor serves, then close, leave the server answering at once.
// Before, a close rescanned the other connection's waits once per wait
// of its own: the loop froze for many seconds (with four such
// connections the watchdog ended the process), and the witness below
// timed out. The race detector's run floods a quarter as much.
func TestWaitFlood_CloseLeavesServerResponsive(t *testing.T) {
	addr := startServer(t, maincontrol.Config{})
	owner := clientPeer(t, addr)
	id := owner.submit("k", "task_type", "nobody", "key", "K")

	const flooders = 2
	waits := 1 << 16
	if raceEnabled {
		waits /= 4
	}
	var burst []byte
	for range waits {
		burst = append(burst, mustFrame(t, "submit", "req", "w", "task_type", "nobody", "key", "K", "wait", "true")...)
	}
	burst = append(burst, mustFrame(t, "stats", "req", "end")...)
	var wg sync.WaitGroup
	peers := make([]*rawPeer, flooders)
	for i := range peers {
		peers[i] = clientPeer(t, addr)
	}
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.c.Write(burst)
			assert.NoError(t, err)
		}()
	}
	for _, p := range peers {
		for {
			m := p.recv()
			if m.Type() == "stats" {
				require.Equal(t, "end", m.Value("req"))
				break
			}
			require.Equal(t, "submitted", m.Type(), "%s", m)
		}
	}
	wg.Wait()
	for _, p := range peers {
		require.NoError(t, p.c.Close())
	}

	// Served at once (recv waits 5 s at most), and the task's own waiter
	// is still told when it ends.
	witness := clientPeer(t, addr)
	witness.alive("after")
	owner.send("submit", "req", "again", "task_type", "nobody", "key", "K", "wait", "true")
	assert.Equal(t, "true", owner.expect("submitted").Value("duplicate"))
	owner.send("cancel", "req", "c", "task_id", u(id))
	got := map[string]string{}
	for range 2 {
		m := owner.recv()
		got[m.Type()] = m.Value("req")
	}
	assert.Equal(t, map[string]string{"done": "again", "cancelled": "c"}, got)
}
