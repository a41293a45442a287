package executor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/wire"
)

// TestExecutor_ChangeTypesRefused checks that a refused `types` changes
// nothing: the executor keeps its old types and still runs their tasks.
func TestExecutor_ChangeTypesRefused(t *testing.T) {
	f := mustStartFakeMain(t)
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"old": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	s.logs.eventually(t, "registered")

	for i, code := range []string{"unavailable", "bad_request"} {
		errs := make(chan error, 1)
		go func() {
			errs <- s.e.ChangeTypes(context.Background(), map[string]executor.Handler{"new": echoHandler()}, "old")
		}()
		m := c.expect("types")
		assert.Equal(t, "new", m.Value("add"))
		assert.Equal(t, "old", m.Value("drop"))
		c.send("error", "req", m.Value("req"), "code", code, "message", "no")
		err := <-errs
		var se *executor.ServerError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, wire.Code(code), se.Code)
		assert.Equal(t, []string{"old"}, s.e.TaskTypes(), "a refused change keeps the old types")

		// The main control still dispatches the old type: it must run.
		id := uint64(i + 1)
		c.sendTask(id, 1, "old")
		c.expectStarted(id, 1)
		assert.Equal(t, "succeeded", c.expectResult(id, 1).Value("status"))
		c.ack(id, 1)
		// The refused added type has no handler here.
		c.sendTask(id+10, 1, "new")
		c.expectStarted(id+10, 1)
		assert.Equal(t, "failed", c.expectResult(id+10, 1).Value("status"))
		c.ack(id+10, 1)
	}
}
