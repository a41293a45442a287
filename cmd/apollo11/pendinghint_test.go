package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// The hint suggests only what `apollo11 executor` can start: its
// built-in types, exec with the flags that allow it, and nothing for a
// type of the user's own (a mistyped --type among them).
func TestStartOne(t *testing.T) {
	for typ, want := range map[string]string{
		"echo":       "`apollo11 executor --types echo` starts one",
		"sleep":      "`apollo11 executor --types sleep` starts one",
		"fail":       "`apollo11 executor --types fail` starts one",
		"exec":       "`apollo11 executor --types exec --allow-exec --exec-allow PROGRAM,...` starts one",
		"nosuchtype": "apollo11 executor runs only echo, sleep, fail and exec: a type of your own needs an executor built with the executor package",
	} {
		assert.Equal(t, want, startOne(typ), typ)
	}
}

// A wait with no --wait-timeout is told, with the hint, that it has no
// end of its own and how to end it: a type no executor takes would
// otherwise keep it waiting without a word after the hint.
func TestPendingHint_SaysAWaitForeverHasNoEnd(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{})
	cl := dialClient(t, addr)
	req := client.SubmitRequest{Type: "nosuchtype"}
	for _, forever := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		task, err := cl.Submit(ctx, req)
		cancel()
		require.NoError(t, err)
		var out syncbuf.Buffer
		stop := pendingHint(&out, cl, task.ID, req, 10*time.Millisecond, 20*time.Second, forever)
		require.Eventually(t, func() bool { return out.String() != "" }, 30*time.Second, 10*time.Millisecond)
		stop()
		assert.Contains(t, out.String(), "is still pending after 10ms")
		if forever {
			assert.Contains(t, out.String(), "This wait has no end of its own: Ctrl-C leaves the task queued, and --wait-timeout bounds the wait.")
		} else {
			assert.NotContains(t, out.String(), "no end")
		}
	}
}
