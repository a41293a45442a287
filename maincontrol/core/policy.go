// policy.go holds per-type policies, as data. Parsing a policy file and
// reloading it belong to the server. The core only applies what it gets.

package core

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// RetryKind is how a type's retry delay grows between attempts.
type RetryKind uint8

const (
	// RetryDefault uses the global delay (Config.RetryBase and RetryCap).
	RetryDefault RetryKind = iota
	// RetryNone makes no retries. A task without its own max_attempts gets 1.
	RetryNone
	// RetryFixed makes every retry wait RetryBase, jittered.
	RetryFixed
	// RetryExponential waits min(RetryCap, RetryBase*2^(n-1)), jittered.
	RetryExponential
)

var retryNames = [...]string{"", "none", "fixed", "exponential"}

func (k RetryKind) String() string {
	if int(k) < len(retryNames) {
		return retryNames[k]
	}
	return fmt.Sprintf("RetryKind(%d)", k)
}

// ParseRetryKind reads none, fixed or exponential ("" is RetryDefault).
func ParseRetryKind(s string) (RetryKind, error) {
	for i, n := range retryNames {
		if n == s {
			return RetryKind(i), nil
		}
	}
	return 0, fmt.Errorf("retry %q: want none, fixed or exponential", s)
}

// StuckAction is what the main control does with a stuck task.
type StuckAction uint8

const (
	StuckNone    StuckAction = iota // flag it only
	StuckRequeue                    // take it back; it runs again at once if attempts remain
	StuckFail                       // take it back and fail it
)

var stuckNames = [...]string{"none", "requeue", "fail"}

func (a StuckAction) String() string {
	if int(a) < len(stuckNames) {
		return stuckNames[a]
	}
	return fmt.Sprintf("StuckAction(%d)", a)
}

// ParseStuckAction reads none, requeue or fail ("" is none).
func ParseStuckAction(s string) (StuckAction, error) {
	if s == "" {
		return StuckNone, nil
	}
	for i, n := range stuckNames {
		if n == s {
			return StuckAction(i), nil
		}
	}
	return 0, fmt.Errorf("stuck_action %q: want none, requeue or fail", s)
}

// Policy is one task type's settings. A zero field is unset. The task's
// own value, the defaults' value or the global one applies instead.
type Policy struct {
	Timeout     time.Duration // timeout_ms of a submit that gives none
	MaxAttempts uint64        // max_attempts of a submit that gives none
	Priority    uint8         // priority of a submit that gives none, when HasPriority
	HasPriority bool
	Retry       RetryKind
	RetryBase   time.Duration // fixed: the delay; exponential: the first delay
	RetryCap    time.Duration // exponential: the longest delay
	// MaxRunning caps the type's dispatched and running tasks over all
	// executors. RatePerSec caps its dispatches in any one second.
	MaxRunning int
	RatePerSec int
	// A running task is stuck past StuckAfter, or past StuckFactor times
	// the type's recent p99 run time (stuck.go).
	StuckAfter  time.Duration
	StuckFactor float64
	StuckAction StuckAction
}

// Policies is every policy the main control applies. Default fills the
// fields a listed type leaves unset, and applies whole to unlisted types.
type Policies struct {
	Default Policy
	Types   map[string]Policy
}

// Limits of a policy set. They bound what the core keeps per type.
const (
	MaxPolicyTypes = 1024
	MaxRatePerSec  = 1_000_000
)

// ErrPolicy wraps every refused policy.
var ErrPolicy = errors.New("invalid policy")

// merge fills p's unset fields from d.
func (p Policy) merge(d Policy) Policy {
	set := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	set(&p.Timeout, d.Timeout)
	set(&p.RetryBase, d.RetryBase)
	set(&p.RetryCap, d.RetryCap)
	set(&p.StuckAfter, d.StuckAfter)
	if p.MaxAttempts == 0 && p.Retry != RetryNone {
		// A type's retry none means one attempt, whatever the defaults say.
		p.MaxAttempts = d.MaxAttempts
	}
	if !p.HasPriority {
		p.Priority, p.HasPriority = d.Priority, d.HasPriority
	}
	if p.Retry == RetryDefault {
		p.Retry = d.Retry
	}
	if p.MaxRunning == 0 {
		p.MaxRunning = d.MaxRunning
	}
	if p.RatePerSec == 0 {
		p.RatePerSec = d.RatePerSec
	}
	if p.StuckFactor == 0 {
		p.StuckFactor = d.StuckFactor
	}
	if p.StuckAction == StuckNone {
		p.StuckAction = d.StuckAction
	}
	return p
}

// Check reports the first value the core cannot apply.
func (p Policy) Check() error {
	for name, d := range map[string]time.Duration{"timeout": p.Timeout, "retry_base": p.RetryBase,
		"retry_cap": p.RetryCap, "stuck_after": p.StuckAfter} {
		if d < 0 || d > 0 && d < time.Millisecond {
			return fmt.Errorf("%s %v: want 1ms or more", name, d)
		}
	}
	switch {
	case p.HasPriority && p.Priority > 9:
		return fmt.Errorf("priority %d: want 0 to 9", p.Priority)
	case p.Retry > RetryExponential:
		return fmt.Errorf("retry %v: want none, fixed or exponential", p.Retry)
	case p.Retry == RetryNone && p.MaxAttempts > 1:
		return fmt.Errorf("retry none with max_attempts %d: none means one attempt", p.MaxAttempts)
	case p.Retry == RetryExponential && p.RetryBase > 0 && p.RetryCap > 0 && p.RetryCap < p.RetryBase:
		return fmt.Errorf("retry_cap %v is below retry_base %v", p.RetryCap, p.RetryBase)
	case p.MaxRunning < 0:
		return fmt.Errorf("max_running %d: want 1 or more", p.MaxRunning)
	case p.RatePerSec < 0 || p.RatePerSec > MaxRatePerSec:
		return fmt.Errorf("rate %d: want 1 to %d per second", p.RatePerSec, MaxRatePerSec)
	case p.StuckFactor < 0 || math.IsNaN(p.StuckFactor) || math.IsInf(p.StuckFactor, 0) ||
		p.StuckFactor > 0 && p.StuckFactor < 1:
		return fmt.Errorf("stuck_factor %v: want 1 or more", p.StuckFactor)
	case p.StuckAction > StuckFail:
		return fmt.Errorf("stuck_action %v: want none, requeue or fail", p.StuckAction)
	case p.StuckAction != StuckNone && p.StuckAfter == 0 && p.StuckFactor == 0:
		return fmt.Errorf("stuck_action %v needs stuck_after or stuck_factor", p.StuckAction)
	}
	return nil
}

func (p *Policy) limits() bool { return p.MaxRunning > 0 || p.RatePerSec > 0 }
func (p *Policy) stuckRule() bool {
	return p.StuckAfter > 0 || p.StuckFactor > 0
}

// typePolicy is a policy in force. The defaults' one serves every
// unlisted type, so the rate window lives on each taskType instead.
type typePolicy struct {
	Policy
}

// policyState is what SetPolicies installed (nil before any).
type policyState struct {
	set       Policies
	byType    map[string]*typePolicy
	other     *typePolicy // unlisted types; nil when Default is all unset
	anyLimit  bool
	anyStuck  bool
	rateWake  int64    // when a type held by its rate may go on (0: none)
	throttled []string // the types held by their rate until rateWake
	stuck     stuckState
}

// Check reports the first policy the core would refuse, naming its type.
// Each listed type is checked merged with the defaults.
func (ps Policies) Check() error {
	if len(ps.Types) > MaxPolicyTypes {
		return fmt.Errorf("%w: %d task types, at most %d", ErrPolicy, len(ps.Types), MaxPolicyTypes)
	}
	if err := ps.Default.Check(); err != nil {
		return fmt.Errorf("%w: defaults: %v", ErrPolicy, err)
	}
	for _, name := range slices.Sorted(maps.Keys(ps.Types)) {
		if name == "" {
			return fmt.Errorf("%w: empty task type name", ErrPolicy)
		}
		if err := ps.Types[name].merge(ps.Default).Check(); err != nil {
			return fmt.Errorf("%w: task type %q: %v", ErrPolicy, name, err)
		}
	}
	return nil
}

// SetPolicies replaces the policies in force. Each type's merged policy is
// checked first, and on any error nothing changes. Tasks already submitted
// keep the defaults they got. Limits, retry delays and stuck rules apply
// from now on.
func (c *Core) SetPolicies(ps Policies) error {
	if err := ps.Check(); err != nil {
		return err
	}
	next := &policyState{set: ps, byType: make(map[string]*typePolicy, len(ps.Types))}
	if c.pol != nil {
		next.stuck = c.pol.stuck
	}
	keep := func(p Policy) *typePolicy {
		// The rate windows stay on the types. So a reload does not reopen
		// a full second's worth of dispatches.
		tp := &typePolicy{Policy: p}
		next.anyLimit = next.anyLimit || p.limits()
		next.anyStuck = next.anyStuck || p.stuckRule()
		return tp
	}
	for name, p := range ps.Types {
		next.byType[name] = keep(p.merge(ps.Default))
	}
	if ps.Default != (Policy{}) {
		next.other = keep(ps.Default)
	}
	if !next.anyStuck {
		next.stuck = stuckState{}
	}
	c.pol = next
	if c.hold() {
		defer c.release()
	}
	for _, tt := range c.types {
		c.markDirty(tt) // a limit may have gone up
	}
	c.dispatchDirty()
	return nil
}

// CurrentPolicies returns the policies in force, as given to SetPolicies.
func (c *Core) CurrentPolicies() Policies {
	if c.pol == nil {
		return Policies{}
	}
	return c.pol.set
}

// PolicyOf returns the policy that applies to a task type, merged with
// the defaults, and whether any does.
func (c *Core) PolicyOf(name string) (Policy, bool) {
	if c.pol == nil {
		return Policy{}, false
	}
	if tp := c.pol.lookup(name); tp != nil {
		return tp.Policy, true
	}
	return Policy{}, false
}

// lookup returns the policy of a type, its own or else the defaults.
func (ps *policyState) lookup(name string) *typePolicy {
	if tp := ps.byType[name]; tp != nil {
		return tp
	}
	if name == "" {
		return nil
	}
	return ps.other
}

// policyDefaults fills what a submit left out from its type's policy. A
// task's own values win.
func (c *Core) policyDefaults(f *submitFields, s *submitReq) {
	if c.pol == nil {
		return
	}
	tp := c.pol.lookup(s.typ)
	if tp == nil {
		return
	}
	if !f.has(v1Priority) && tp.HasPriority {
		s.priority = uint64(tp.Priority)
	}
	if !f.has(v1MaxAttempts) {
		switch {
		case tp.MaxAttempts > 0:
			s.maxAttempts = tp.MaxAttempts
		case tp.Retry == RetryNone:
			s.maxAttempts = 1
		}
	}
	if !f.has(v1Timeout) && tp.Timeout > 0 {
		s.timeoutMs = uint64((tp.Timeout + time.Millisecond - 1) / time.Millisecond)
	}
}

// retryDelay is the policy's delay shape for a type, or the global one.
func (c *Core) retryDelay(tt *taskType) (kind RetryKind, base, ceil time.Duration) {
	kind, base, ceil = RetryExponential, c.cfg.RetryBase, c.cfg.RetryCap
	if c.pol == nil {
		return kind, base, ceil
	}
	tp := c.pol.lookup(tt.name)
	if tp == nil || tp.Retry == RetryDefault || tp.Retry == RetryNone {
		// With none, a task's own max_attempts above 1 won. It retries
		// as every task does.
		return kind, base, ceil
	}
	if tp.RetryBase > 0 {
		base = tp.RetryBase
	}
	if tp.RetryCap > 0 {
		ceil = tp.RetryCap
	}
	return tp.Retry, base, ceil
}

// mayDispatch reports whether a task of tt may be dispatched now under
// its policy's limits. A type held by its rate is woken by policyTick.
func (c *Core) mayDispatch(tt *taskType) bool {
	if c.pol == nil || !c.pol.anyLimit {
		return true
	}
	tp := c.pol.lookup(tt.name)
	if tp == nil {
		return true
	}
	if tp.MaxRunning > 0 && tt.active() >= tp.MaxRunning {
		return false // a task of tt leaving its executor marks it dirty (detach)
	}
	if tp.RatePerSec > 0 {
		now := c.now()
		if w := tt.rate; w != nil && !w.room(now, tp.RatePerSec) {
			c.holdForRate(tt.name, w.freeAt(tp.RatePerSec))
			return false
		}
	}
	return true
}

// policyDispatched counts a dispatch toward its type's rate.
func (c *Core) policyDispatched(tt *taskType, now int64) {
	if c.pol == nil || !c.pol.anyLimit {
		return
	}
	if tp := c.pol.lookup(tt.name); tp != nil && tp.RatePerSec > 0 {
		if tt.rate == nil {
			tt.rate = &rateWindow{}
		}
		tt.rate.add(now)
	}
}

// activeLeft notes that a dispatched or running task of tt left its
// executor. A type held by max_running may go on.
func (c *Core) activeLeft(tt *taskType) {
	if c.pol != nil && c.pol.anyLimit {
		c.markDirty(tt)
	}
}

func (c *Core) holdForRate(name string, at int64) {
	ps := c.pol
	if ps.rateWake == 0 || at < ps.rateWake {
		ps.rateWake = at
	}
	for _, n := range ps.throttled {
		if n == name {
			return
		}
	}
	ps.throttled = append(ps.throttled, name)
}

// policyTick wakes the types held by their rate once it allows more, and
// looks for stuck tasks.
func (c *Core) policyTick(now int64) {
	ps := c.pol
	if ps == nil {
		return
	}
	if ps.rateWake != 0 && ps.rateWake <= now {
		for _, n := range ps.throttled {
			if tt := c.types[n]; tt != nil {
				c.markDirty(tt)
			}
		}
		ps.throttled, ps.rateWake = ps.throttled[:0], 0
	}
	c.sweepStuck(now)
}

// policyDue is when policyTick next has work. ok is false for never.
func (c *Core) policyDue() (int64, bool) {
	ps := c.pol
	if ps == nil {
		return 0, false
	}
	at, ok := int64(math.MaxInt64), false
	if ps.rateWake != 0 {
		at, ok = ps.rateWake, true
	}
	if ps.anyStuck && c.counts[Running] > 0 {
		at, ok = min(at, ps.stuck.nextSweep), true
	}
	return at, ok
}

// rateWindow counts a type's dispatches over the last second, by
// millisecond. It holds at most 1,000 entries, whatever the rate.
type rateWindow struct {
	at    []int64 // the milliseconds with dispatches, oldest first
	n     []int32 // dispatches in each
	total int
}

// expire drops the dispatches a second or more before now.
func (w *rateWindow) expire(now int64) {
	i := 0
	for i < len(w.at) && w.at[i] <= now-1000 {
		w.total -= int(w.n[i])
		i++
	}
	if i > 0 {
		w.at = append(w.at[:0], w.at[i:]...)
		w.n = append(w.n[:0], w.n[i:]...)
	}
}

// room reports whether one more dispatch at now stays within rate.
func (w *rateWindow) room(now int64, rate int) bool {
	w.expire(now)
	return w.total < rate
}

func (w *rateWindow) add(now int64) {
	if k := len(w.at); k > 0 && w.at[k-1] >= now {
		w.n[k-1]++
	} else {
		w.at = append(w.at, now)
		w.n = append(w.n, 1)
	}
	w.total++
}

// freeAt is the first millisecond at which room holds again.
func (w *rateWindow) freeAt(rate int) int64 {
	left := w.total
	for i, at := range w.at {
		if left -= int(w.n[i]); left < rate {
			return at + 1000
		}
	}
	return 0
}
