package core

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (h *harness) policies(ps Policies) {
	h.t.Helper()
	require.NoError(h.t, h.c.SetPolicies(ps))
}

// A type's policy fills what a submit leaves out; the task's own values
// win; the defaults cover unlisted types, and fill a listed type's gaps.
func TestPolicy_SubmitDefaults(t *testing.T) {
	h := newHarness(t)
	h.policies(Policies{
		Default: Policy{MaxAttempts: 7},
		Types: map[string]Policy{
			"x":    {Timeout: 1500 * time.Microsecond, Priority: 4, HasPriority: true},
			"once": {Retry: RetryNone},
			"zero": {Priority: 0, HasPriority: true, MaxAttempts: 2},
		},
	})
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	got := h.get(id)
	assert.EqualValues(t, 2, got.timeoutMs, "1.5ms rounds up")
	assert.EqualValues(t, 4, got.priority)
	assert.EqualValues(t, 7, got.maxAttempts, "from the defaults")

	own := h.get(h.submit(cl, "task_type", "x", "timeout_ms", "0", "priority", "9", "max_attempts", "1"))
	assert.EqualValues(t, 0, own.timeoutMs, "the task's own values win, zero too")
	assert.EqualValues(t, 9, own.priority)
	assert.EqualValues(t, 1, own.maxAttempts)

	assert.EqualValues(t, 7, h.get(h.submit(cl, "task_type", "other")).maxAttempts, "unlisted: the defaults")
	assert.EqualValues(t, 1, h.get(h.submit(cl, "task_type", "once")).maxAttempts, "retry none: one attempt")
	assert.EqualValues(t, 5, h.get(h.submit(cl, "task_type", "once", "max_attempts", "5")).maxAttempts)
	assert.EqualValues(t, 2, h.get(h.submit(cl, "task_type", "zero")).maxAttempts)

	// Without policies the spec's defaults hold.
	h.policies(Policies{})
	plain := h.get(h.submit(cl, "task_type", "x"))
	assert.EqualValues(t, DefaultMaxAttempts, plain.maxAttempts)
	assert.EqualValues(t, 0, plain.priority)
	assert.EqualValues(t, 0, plain.timeoutMs)
	assert.EqualValues(t, 2, h.get(id).timeoutMs, "submitted tasks keep what they got")
	h.checkReplay()
}

// Retry delays follow the type's retry policy; types without one, and a
// task of a retry-none type that asked for more attempts, use the global
// base and cap.
func TestPolicy_RetryDelay(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.RetryBase, c.RetryCap = 100*time.Millisecond, 300*time.Millisecond
		c.Rand = rand.New(rand.NewPCG(3, 4))
	})
	h.policies(Policies{Types: map[string]Policy{
		"fix":  {Retry: RetryFixed, RetryBase: 2 * time.Second, RetryCap: time.Millisecond},
		"exp":  {Retry: RetryExponential, RetryBase: 10 * time.Second, RetryCap: 25 * time.Second},
		"none": {Retry: RetryNone},
	}})
	within := func(typ string, n uint32, full time.Duration) {
		t.Helper()
		for range 100 {
			d := h.c.backoff(&taskType{name: typ}, n)
			require.GreaterOrEqual(t, d, full/2, "%s attempt %d", typ, n)
			require.LessOrEqual(t, d, full, "%s attempt %d", typ, n)
		}
	}
	for n := uint32(1); n <= 5; n++ {
		within("fix", n, 2*time.Second)
		within("exp", n, min(25*time.Second, 10*time.Second<<(n-1)))
		within("none", n, min(300*time.Millisecond, 100*time.Millisecond<<(n-1)))
		within("plain", n, min(300*time.Millisecond, 100*time.Millisecond<<(n-1)))
	}

	// Through a failed result: the retry is due within the fixed delay.
	cl := h.client()
	ex := h.executor("e1", "fix", 1)
	id := h.submit(cl, "task_type", "fix")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "failed")
	due := time.Duration(h.get(id).dueMs-h.c.now()) * time.Millisecond
	assert.GreaterOrEqual(t, due, time.Second)
	assert.LessOrEqual(t, due, 2*time.Second)

	// Retry none: the first failure is final.
	ex2 := h.executor("e2", "none", 1)
	id2 := h.submit(cl, "task_type", "none")
	_, v2 := h.task(ex2)
	h.start(ex2, id2, v2)
	h.accepted(ex2, id2, v2, "failed")
	assert.Equal(t, Failed, h.state(id2))
	h.checkReplay()
}

// max_running caps a type's dispatched and running tasks over every
// executor; a slot of the type freed, or a raised limit, lets the next go.
func TestPolicy_MaxRunning(t *testing.T) {
	h := newHarness(t)
	h.policies(Policies{Types: map[string]Policy{"x": {MaxRunning: 2}}})
	cl := h.client()
	a := h.executor("a", "x,y", 3)
	b := h.executor("b", "x", 3)
	ids := make([]uint64, 6)
	for i := range ids {
		ids[i] = h.submit(cl, "task_type", "x")
	}
	y := h.submit(cl, "task_type", "y")
	count := func(s State) int {
		n := 0
		for _, id := range ids {
			if h.state(id) == s {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 2, count(Dispatched), "two of x at once")
	assert.Equal(t, Dispatched, h.state(y), "other types are not held")
	frames := append(h.drain(a), h.drain(b)...)
	var first *taskRef
	for _, m := range frames {
		if m.Value("task_type") == "x" {
			id, v := tokenOf(t, m)
			first = &taskRef{id, v}
			break
		}
	}
	require.NotNil(t, first)
	// The first x task ends (cancelled by the client): the next goes.
	h.send(cl, "cancel", "req", "c", "task_id", itoa(first.id))
	h.expect(cl, "cancelled")
	assert.Equal(t, 2, count(Dispatched))
	assert.Equal(t, 3, count(Pending))
	require.NoError(t, checkInvariants(h.c, map[string]int{}))

	h.policies(Policies{Types: map[string]Policy{"x": {MaxRunning: 4}}})
	assert.Equal(t, 4, count(Dispatched), "a raised limit dispatches at once")
	h.policies(Policies{})
	assert.Equal(t, 5, count(Dispatched), "no limit: every free slot")
	h.checkReplay()
}

type taskRef struct{ id, ver uint64 }

// rate caps a type's dispatches in any one second, on the injected clock;
// the core asks for a tick when the second is over.
func TestPolicy_Rate(t *testing.T) {
	h := newHarness(t)
	h.policies(Policies{Types: map[string]Policy{"x": {RatePerSec: 2}}})
	cl := h.client()
	h.executor("a", "x", 10)
	ids := make([]uint64, 5)
	for i := range ids {
		ids[i] = h.submit(cl, "task_type", "x")
	}
	dispatched := func() int {
		n := 0
		for _, id := range ids {
			if h.state(id) == Dispatched {
				n++
			}
		}
		return n
	}
	start := h.c.now()
	assert.Equal(t, 2, dispatched())
	at, ok := h.c.NextTickAt()
	require.True(t, ok)
	assert.LessOrEqual(t, at, start+1000, "a tick when the window frees")
	h.advance(999 * time.Millisecond)
	assert.Equal(t, 2, dispatched(), "not within the second")
	h.advance(time.Millisecond)
	assert.Equal(t, 4, dispatched(), "the next second's two")
	// A reload keeps the window: no fresh burst.
	h.policies(Policies{Types: map[string]Policy{"x": {RatePerSec: 2}}})
	assert.Equal(t, 4, dispatched())
	h.advance(time.Second)
	assert.Equal(t, 5, dispatched())
	h.checkReplay()
}

func TestPolicy_RateWindow(t *testing.T) {
	var w rateWindow
	for ms := int64(0); ms < 10; ms++ {
		require.True(t, w.room(ms, 30))
		w.add(ms)
		w.add(ms)
		w.add(ms)
	}
	assert.False(t, w.room(10, 30))
	assert.EqualValues(t, 1000, w.freeAt(30), "the first millisecond's three leave at 1000")
	assert.False(t, w.room(999, 30))
	assert.True(t, w.room(1000, 30))
	assert.Equal(t, 27, w.total)
	assert.Len(t, w.at, 9, "one entry per millisecond, not per dispatch")
}

// A bad policy set changes nothing and says what is wrong.
func TestPolicy_Refused(t *testing.T) {
	h := newHarness(t)
	good := Policies{Types: map[string]Policy{"x": {MaxRunning: 1}}}
	h.policies(good)
	for _, tc := range []struct {
		ps   Policies
		want string
	}{
		{Policies{Types: map[string]Policy{"x": {Priority: 10, HasPriority: true}}}, `task type "x": priority 10`},
		{Policies{Types: map[string]Policy{"x": {Retry: RetryNone, MaxAttempts: 3}}}, "retry none with max_attempts 3"},
		{Policies{Types: map[string]Policy{"x": {Retry: RetryExponential, RetryBase: time.Minute, RetryCap: time.Second}}}, "retry_cap 1s is below retry_base 1m0s"},
		{Policies{Types: map[string]Policy{"x": {RatePerSec: -1}}}, "rate -1"},
		{Policies{Types: map[string]Policy{"x": {StuckFactor: 0.5}}}, "stuck_factor 0.5"},
		{Policies{Types: map[string]Policy{"x": {StuckFactor: math.NaN()}}}, "stuck_factor NaN"},
		{Policies{Types: map[string]Policy{"x": {StuckAction: StuckFail}}}, "stuck_action fail needs stuck_after or stuck_factor"},
		{Policies{Types: map[string]Policy{"x": {Timeout: time.Microsecond}}}, "timeout 1µs: want 1ms or more"},
		{Policies{Types: map[string]Policy{"": {}}}, "empty task type name"},
		{Policies{Default: Policy{MaxRunning: -2}}, "defaults: max_running -2"},
		// Merged with the defaults: their retry none meets the type's max_attempts.
		{Policies{Default: Policy{Retry: RetryNone}, Types: map[string]Policy{"x": {MaxAttempts: 4}}}, "retry none with max_attempts 4"},
	} {
		err := h.c.SetPolicies(tc.ps)
		require.ErrorIs(t, err, ErrPolicy, tc.want)
		assert.Contains(t, err.Error(), tc.want)
		assert.Equal(t, good, h.c.CurrentPolicies(), "kept after %q", tc.want)
	}
	many := Policies{Types: map[string]Policy{}}
	for i := range MaxPolicyTypes + 1 {
		many.Types[itoa(i)] = Policy{}
	}
	require.ErrorIs(t, h.c.SetPolicies(many), ErrPolicy)
}

func TestPolicy_Names(t *testing.T) {
	for _, n := range []string{"none", "fixed", "exponential", ""} {
		k, err := ParseRetryKind(n)
		require.NoError(t, err)
		assert.Equal(t, n, k.String())
	}
	_, err := ParseRetryKind("linear")
	assert.ErrorContains(t, err, "want none, fixed or exponential")
	for _, n := range []string{"none", "requeue", "fail"} {
		a, err := ParseStuckAction(n)
		require.NoError(t, err)
		assert.Equal(t, n, a.String())
	}
	_, err = ParseStuckAction("kill")
	assert.ErrorContains(t, err, "want none, requeue or fail")
}

// The defaults' rate holds each unlisted type apart: one shared window
// would let two types together dispatch only the rate of one.
func TestPolicyDefaultRateIsPerType(t *testing.T) {
	h := newHarness(t)
	if err := h.c.SetPolicies(Policies{Default: Policy{RatePerSec: 2}}); err != nil {
		t.Fatal(err)
	}
	cl := h.client()
	for i := 0; i < 3; i++ {
		h.submit(cl, "task_type", "a")
		h.submit(cl, "task_type", "b")
	}
	ex := h.executor("e1", "a,b", 10)
	n := 0
	for _, m := range h.fx.frames[ex] {
		if m.Type() == "task" {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("%d tasks dispatched in the first second, want 4 (2 per type)", n)
	}
}
