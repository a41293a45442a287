package executor_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

// lifeHandler has every optional method: Validate, Describe, Rollback.
type lifeHandler struct {
	desc      executor.Description
	validate  func(args map[string]string) error
	validated chan struct{} // closed by the first Validate, when set
	hold      chan struct{} // Validate waits for it, when set
	handled   chan string   // "handle" or "rollback <id>"
	once      sync.Once
}

func (h *lifeHandler) Describe() executor.Description { return h.desc }

func (h *lifeHandler) Validate(args map[string]string) error {
	if h.validated != nil {
		h.once.Do(func() { close(h.validated) })
	}
	if h.hold != nil {
		<-h.hold
	}
	if h.validate != nil {
		return h.validate(args)
	}
	return nil
}

func (h *lifeHandler) Handle(context.Context, *executor.Task) (executor.Result, error) {
	h.handled <- "handle"
	return executor.Result{Out: map[string]string{"by": "handle"}}, nil
}

func (h *lifeHandler) Rollback(_ context.Context, t *executor.Task) (executor.Result, error) {
	h.handled <- "rollback " + u(t.RollbackOf)
	return executor.Result{Out: map[string]string{"by": "rollback"}}, nil
}

// A Describer's description rides on register; a plain handler sends none.
func TestLifecycle_RegisterCarriesDescriptions(t *testing.T) {
	f := mustStartFakeMain(t)
	h := &lifeHandler{desc: executor.Description{Name: "resizer", Version: "1.2", DefaultTimeout: 1500 * time.Microsecond,
		Args: []executor.Arg{{Name: "path", Kind: executor.ArgString, Required: true}, {Name: "w", Kind: executor.ArgInt}}}}
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"resize": h, "plain": echoHandler()}})
	c := f.accept(t)
	m := c.registerQuiet()
	assert.Equal(t, map[string]string{"0.type": "resize", "0.name": "resizer", "0.version": "1.2",
		"0.args": "path:string:required,w:int", "0.timeout_ms": "2"}, prefixed(m, "describe."),
		"timeouts round up to whole milliseconds")
}

// A bad description is a configuration error, at New and at ChangeTypes.
func TestLifecycle_BadDescriptionIsConfigError(t *testing.T) {
	for _, d := range []executor.Description{
		{Args: []executor.Arg{{Name: "x", Kind: "number"}}},
		{Args: []executor.Arg{{Name: "Upper", Kind: executor.ArgInt}}},
		{Args: []executor.Arg{{Name: "x", Kind: executor.ArgInt}, {Name: "x", Kind: executor.ArgBool}}},
		{Version: strings.Repeat("v", 65)},
		{DefaultTimeout: -time.Second},
	} {
		_, err := executor.New(executor.Config{ID: "e", Handlers: map[string]executor.Handler{"t": &lifeHandler{desc: d}}})
		assert.ErrorIs(t, err, executor.ErrConfig, "%+v", d)
	}
}

// Validate runs before `started`; its error fails the task for good with
// invalid_args, and Handle never runs. The schema check comes first.
func TestLifecycle_ValidateBeforeStarted(t *testing.T) {
	f := mustStartFakeMain(t)
	h := &lifeHandler{handled: make(chan string, 4), validated: make(chan struct{}), hold: make(chan struct{}),
		desc: executor.Description{Args: []executor.Arg{{Name: "n", Kind: executor.ArgInt, Required: true}}},
		validate: func(args map[string]string) error {
			if args["n"] == "13" {
				return errors.New("n may not be 13")
			}
			return nil
		}}
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": h}, Slots: 4})
	c := f.accept(t)
	c.registerQuiet()

	c.sendTask(1, 1, "job", "arg.n", "13")
	<-h.validated
	c.expectNothing(100 * time.Millisecond) // no started while Validate runs
	close(h.hold)
	c.expectStarted(1, 1)
	m := c.expectResult(1, 1)
	assert.Equal(t, "failed", m.Value("status"))
	assert.Equal(t, "false", m.Value("retryable"), "never retried")
	assert.Equal(t, "invalid_args: n may not be 13", m.Value("error"))
	c.ack(1, 1)

	for _, tc := range []struct{ args []string }{{nil}, {[]string{"arg.n", "many"}}} {
		c.sendTask(2, 1, "job", tc.args...)
		c.expectStarted(2, 1)
		m = c.expectResult(2, 1)
		assert.Equal(t, "false", m.Value("retryable"))
		assert.True(t, strings.HasPrefix(m.Value("error"), "invalid_args: arg n: "), m.Value("error"))
		c.ack(2, 1)
	}

	c.sendTask(3, 1, "job", "arg.n", "7", "arg.extra", "x") // unknown args pass
	c.expectStarted(3, 1)
	assert.Equal(t, "succeeded", c.expectResult(3, 1).Value("status"))
	assert.Equal(t, "handle", <-h.handled)
	assert.Empty(t, h.handled, "Handle ran only for the valid task")
}

// A task with rollback_of runs Rollback, unchecked; a handler without
// Rollback gets it in Handle.
func TestLifecycle_RollbackOf(t *testing.T) {
	f := mustStartFakeMain(t)
	h := &lifeHandler{handled: make(chan string, 4), validate: func(map[string]string) error { return errors.New("no") }}
	plain := make(chan uint64, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"undoable": h,
		"cleanup": executor.HandlerFunc(func(_ context.Context, t *executor.Task) (executor.Result, error) {
			plain <- t.RollbackOf
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(9, 1, "undoable", "rollback_of", "7")
	c.expectStarted(9, 1)
	m := c.expectResult(9, 1)
	assert.Equal(t, "rollback", m.Value("out.by"), "result: %s", m)
	assert.Equal(t, "rollback 7", <-h.handled)
	c.ack(9, 1)

	c.sendTask(10, 1, "cleanup", "rollback_of", "8")
	c.expectStarted(10, 1)
	assert.Equal(t, "succeeded", c.expectResult(10, 1).Value("status"))
	assert.EqualValues(t, 8, <-plain)
	c.ack(10, 1)

	c.sendTask(11, 1, "cleanup", "rollback_of", "x")
	c.expectStarted(11, 1)
	assert.Contains(t, c.expectResult(11, 1).Value("error"), "bad task frame: rollback_of")
}

// The default timeout bounds a task sent without timeout_ms; one with its
// own keeps it.
func TestLifecycle_DefaultTimeout(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 2)
	blocking := &describedBlock{Handler: blockHandler(release, causes), d: executor.Description{DefaultTimeout: 50 * time.Millisecond}}
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"block": blocking}, Slots: 2})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(4, 1, "block")
	c.expectStarted(4, 1)
	m := c.expectResult(4, 1)
	assert.Equal(t, "timeout after 50ms: task timeout expired", m.Value("error"))
	assert.False(t, m.Has("retryable"), "a timeout is retryable")
	assert.ErrorIs(t, <-causes, executor.ErrTaskTimeout)
	c.ack(4, 1)

	c.send("task", "task_id", "5", "version", "1", "task_type", "block", "attempt", "1", "max_attempts", "1",
		"timeout_ms", "60000", "trace_id", "t5", "state_version", "0")
	c.expectStarted(5, 1)
	c.expectNothing(200 * time.Millisecond)
	close(release)
	assert.Equal(t, "succeeded", c.expectResult(5, 1).Value("status"))
}

type describedBlock struct {
	executor.Handler
	d executor.Description
}

func (b *describedBlock) Describe() executor.Description { return b.d }

// ChangeTypes sends the descriptions of the handlers it adds.
func TestLifecycle_ChangeTypesDescribes(t *testing.T) {
	f := mustStartFakeMain(t)
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"a": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	s.logs.eventually(t, "registered") // the connection is current: ChangeTypes uses it
	done := make(chan error, 1)
	go func() {
		done <- s.e.ChangeTypes(context.Background(), map[string]executor.Handler{
			"b": &lifeHandler{desc: executor.Description{Version: "3"}}})
	}()
	m := c.expect("types")
	assert.Equal(t, map[string]string{"0.type": "b", "0.version": "3"}, prefixed(m, "describe."))
	c.send("types_ok", "req", m.Value("req"), "task_types", "2")
	require.NoError(t, <-done)
}

// End to end: a real main control fails a task whose args Validate
// refuses at its first attempt, though it may take three.
func TestLifecycle_ValidateNoRetryAgainstRealMainControl(t *testing.T) {
	addr := realMainControl(t)
	h := &lifeHandler{handled: make(chan string, 4),
		validate: func(args map[string]string) error {
			if args["size"] == "" {
				return errors.New("size is empty")
			}
			return nil
		}}
	ex, err := executor.New(executor.Config{Addr: addr, ID: "valid-1", Handlers: map[string]executor.Handler{"resize": h},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-runDone)
	}()
	cl, err := client.Dial(context.Background(), addr, client.Options{})
	require.NoError(t, err)
	defer cl.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()

	sub, done, err := cl.SubmitWait(wctx, client.SubmitRequest{Type: "resize", MaxAttempts: 3, Args: map[string]string{"size": ""}})
	require.NoError(t, err)
	assert.Equal(t, "failed", done.State)
	assert.Equal(t, "invalid_args: size is empty", done.Error)
	st, err := cl.Query(wctx, sub.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Attempt, "not retried")
	assert.EqualValues(t, 3, st.MaxAttempts)
	assert.Empty(t, h.handled)
}

// Descriptions that do not fit the main control's max_frame are left
// out of register, with a warning; the types are all registered.
func TestLifecycle_DescriptionsLeftOutWhenNoRoom(t *testing.T) {
	f := mustStartFakeMain(t, fakemain.WithMaxFrame(2048))
	long := executor.Description{Version: strings.Repeat("v", 64), Name: strings.Repeat("n", 128)}
	handlers := map[string]executor.Handler{}
	for i := range 20 {
		handlers["type"+u(uint64(i))] = &lifeHandler{desc: long}
	}
	s := mustRun(t, f, executor.Config{Handlers: handlers})
	c := f.accept(t)
	m := c.registerQuiet()
	assert.Len(t, strings.Split(m.Value("task_types"), ","), 20)
	n := len(prefixed(m, "describe."))
	assert.Positive(t, n)
	assert.Less(t, n, 20*3, "some descriptions left out")
	frame, err := wire.AppendFrame(nil, m)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(frame)-wire.HeaderLen, 2048, "register fits max_frame")
	rec := s.logs.eventually(t, "descriptions left out of register: no room in the frame")
	assert.NotEmpty(t, rec["task_types"])
}

// A dispatch cancelled while Validate runs never starts: no `started`,
// no result, and Handle does not run.
func TestLifecycle_CancelDuringValidate(t *testing.T) {
	f := mustStartFakeMain(t)
	h := &lifeHandler{handled: make(chan string, 1), validated: make(chan struct{}), hold: make(chan struct{})}
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": h}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "job")
	<-h.validated
	c.send("cancel", "task_id", "1", "version", "1")
	s.logs.eventually(t, "task cancelled by the main control")
	close(h.hold)
	c.expectNothing(300 * time.Millisecond)
	assert.Empty(t, h.handled)
}
