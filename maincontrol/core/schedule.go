package core

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/apollo11/apollo11/wire"
)

// Schedules (protocol section 8.12) fire a body on a cron expression.
// A firing is a submit keyed by the schedule and the fire time, then a
// record that moves the schedule's last fire time on. A crash between
// the two fires that time again: the key finds the task made before.

// Schedule bounds the protocol gives, and the grace a late firing has.
const (
	maxSchedNameLen = 128
	maxCronLen      = 256
	maxZoneLen      = 64
	maxJitterMs     = 3_600_000
	// schedGraceMs: a fire time this late still fires, so that a
	// restart or a stall misses nothing (graceMs).
	schedGraceMs = 60_000
	// schedRetryMs spaces the tries of a firing the core refused.
	schedRetryMs = 1000
	// jitterGaps is how many coming fire times the jitter must fit
	// between, so that firings keep their order.
	jitterGaps = 8
)

// schedOp is what a recSchedOp record does to its schedule.
type schedOp uint8

const (
	schedFired   schedOp = iota + 1 // the body was submitted for fire time last
	schedPassed                     // fire time last was passed over
	schedPaused                     // no firings until resumed
	schedResumed                    // firings start again
	schedDeleted                    // the schedule is forgotten
)

// schedFields are a schedule's durable fields, as records hold them.
type schedFields struct {
	name, cron, tz string
	jitterMs       uint64
	catchUp        bool // missed=catch_up (else skip)
	paused         bool
	last           int64  // unix seconds: the latest fire time fired or passed over
	fires          uint64 // firings made
	lastFired      int64  // unix seconds: the latest fire time fired; 0: none yet
	body           []kv   // submit keys, sorted by key
	op             schedOp
}

// schedule is a live schedule: its fields and what follows from them.
type schedule struct {
	schedFields
	spec cron.Schedule // nil when its expression or zone cannot be read here
	loc  *time.Location
	next int64 // unix seconds: the first fire time after last; 0: none
	// retryAt (ms) holds a refused firing back. It is not durable: after
	// a restart the firing is tried at once.
	retryAt int64
}

// cronParser reads five fields, six with leading seconds, and the
// calendar descriptors (@daily and kin).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.Descriptor)

// parseCron reads a cron expression. The zone is never in it: a TZ=
// prefix makes the parser load a zone from disk.
func parseCron(expr string) (spec cron.Schedule, err error) {
	switch t := strings.TrimSpace(expr); {
	case t == "":
		return nil, errors.New("empty expression")
	case len(expr) > maxCronLen:
		return nil, fmt.Errorf("longer than %d bytes", maxCronLen)
	case strings.Contains(expr, "="):
		return nil, errors.New("no TZ= or CRON_TZ= in the expression: give the zone as tz")
	case strings.HasPrefix(t, "@every"):
		return nil, errors.New("@every is not a calendar: give a cron expression")
	}
	defer func() {
		// The parser is not ours: a panic on odd input is a bad expression.
		if p := recover(); p != nil {
			spec, err = nil, fmt.Errorf("cannot be read: %v", p)
		}
	}()
	return cronParser.Parse(expr)
}

// loadZone loads a schedule's zone through the injected loader.
func (c *Core) loadZone(name string) (*time.Location, error) {
	switch {
	case name == "" || len(name) > maxZoneLen:
		return nil, fmt.Errorf("1 to %d bytes", maxZoneLen)
	case name == "Local":
		return nil, errors.New("Local differs from host to host: name the zone")
	}
	return c.cfg.Zone(name)
}

// validSchedName reports whether n may name a schedule: it goes into
// fire keys and command lines, so it is plain.
func validSchedName(n string) bool {
	if n == "" || len(n) > maxSchedNameLen {
		return false
	}
	for i := 0; i < len(n); i++ {
		switch b := n[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '_', b == '.', b == '-':
		default:
			return false
		}
	}
	return true
}

// schedKeyPrefix starts every fire key. Clients may not use it: a
// client's key equal to a future fire key would cancel that firing.
const schedKeyPrefix = "sched:"

// errSchedKey refuses a client's submit or run_submit of a fire key.
var errSchedKey = &wire.ValueError{Key: "key", Reason: "keys starting with " + schedKeyPrefix + " are reserved for schedules"}

// schedKey is the fire key: the submit's key and trace id.
func schedKey(name string, at int64) string {
	return schedKeyPrefix + name + ":" + strconv.FormatInt(at, 10)
}

// after returns the first fire time after t (unix seconds), 0 for none.
func (sc *schedule) after(t int64) int64 {
	if sc.spec == nil {
		return 0
	}
	n := sc.spec.Next(time.Unix(t, 0).In(sc.loc))
	if n.IsZero() {
		return 0 // none within five years: the parser gives up there
	}
	return n.Unix()
}

// jitter is the delay of fire time at: a hash of its fire key, so every
// run and every replica delays it alike.
func jitter(name string, at int64, jitterMs uint64) int64 {
	if jitterMs == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(schedKey(name, at)))
	return int64(h.Sum64() % jitterMs)
}

// dueOf is when fire time at's delay ends, in ms.
func (sc *schedule) dueOf(at int64) int64 { return at*1000 + jitter(sc.name, at, sc.jitterMs) }

// wake is when sc next needs the tick, in ms; MaxInt64 for never.
func (sc *schedule) wake() int64 {
	if sc.paused || sc.next == 0 {
		return math.MaxInt64
	}
	return max(sc.dueOf(sc.next), sc.retryAt)
}

// minGapMs is the shortest gap between the fire times after from, over
// the next few; MaxInt64 when fewer than two come.
func (sc *schedule) minGapMs(from int64) int64 {
	gap := int64(math.MaxInt64)
	prev := sc.after(from)
	for i := 0; i < jitterGaps && prev != 0; i++ {
		n := sc.after(prev)
		if n == 0 {
			break
		}
		gap = min(gap, (n-prev)*1000)
		prev = n
	}
	return gap
}

// graceMs is how late fire time at may fire and still be on time: the
// grace, or half the gap to the next fire time when that is shorter, so
// that a frequent schedule can miss times too.
func (sc *schedule) graceMs(at int64) int64 {
	if n := sc.after(at); n != 0 {
		return min(schedGraceMs, (n-at)*500)
	}
	return schedGraceMs
}

// latestDue finds the latest fire time after sc.last whose delay ended
// by now (ms). Long downtimes are searched in windows of growing size,
// so that an every-second schedule off for a year costs a few steps.
func (sc *schedule) latestDue(now int64) (int64, bool) {
	if sc.next == 0 || sc.dueOf(sc.next) > now {
		return 0, false
	}
	nowS := now / 1000
	scan := func(from int64) int64 {
		found := int64(0)
		for t, steps := sc.after(from), 0; t != 0 && t <= nowS && steps < 1<<16; t, steps = sc.after(t), steps+1 {
			if sc.dueOf(t) > now {
				break
			}
			found = t
		}
		return found
	}
	for w := int64(60); w < 1<<40 && nowS-w > sc.last; w *= 60 {
		if t := scan(nowS - w); t != 0 {
			return t, true
		}
	}
	if t := scan(sc.last); t != 0 {
		return t, true
	}
	return sc.next, true // its delay ended: the scan's step cap stopped short
}

// upcoming is the fire time sc's next firing will use, judged at now
// (ms) as fireSchedule would: a due time that fires, or the next one
// after a late time that skip passes over. 0 for none.
func (sc *schedule) upcoming(now int64) int64 {
	at, ok := sc.latestDue(now)
	if !ok {
		return sc.next
	}
	if now-sc.dueOf(at) > sc.graceMs(at) && !sc.catchUp {
		return sc.after(at)
	}
	return at
}

// schedTick fires the schedules that are due, in name order.
func (c *Core) schedTick(now int64) {
	if c.schedWake > now {
		return
	}
	var due []*schedule
	for _, sc := range c.scheds {
		if sc.wake() <= now {
			due = append(due, sc)
		}
	}
	slices.SortFunc(due, func(a, b *schedule) int { return strings.Compare(a.name, b.name) })
	for _, sc := range due {
		if c.scheds[sc.name] == sc {
			c.fireSchedule(sc, now)
		}
	}
	c.refreshSchedWake()
}

// refreshSchedWake recomputes the earliest wake of all schedules.
func (c *Core) refreshSchedWake() {
	c.schedWake = math.MaxInt64
	for _, sc := range c.scheds {
		c.schedWake = min(c.schedWake, sc.wake())
	}
}

// fireSchedule handles one due schedule: it fires its latest due fire
// time, or passes it over when that is late and the schedule skips.
func (c *Core) fireSchedule(sc *schedule, now int64) {
	at, ok := sc.latestDue(now)
	if !ok {
		return
	}
	if !c.available {
		sc.retryAt = now + schedRetryMs
		return
	}
	first := sc.next
	if late := now - sc.dueOf(at); late > sc.graceMs(at) && !sc.catchUp {
		c.log.Warn("schedule missed its fire times: passed over (missed=skip)", "schedule", sc.name,
			"from", first, "to", at, "late_ms", late)
		c.commitSchedOp(sc.name, schedPassed, at)
		return
	}
	if rf := c.fireBody(sc, at); rf != nil {
		sc.retryAt = now + schedRetryMs
		c.logLimited(slog.LevelWarn, "schedule firing refused: trying again", "schedule", sc.name,
			"fire_time", at, "code", string(rf.code), "reason", rf.msg)
		return
	}
	if first != at {
		c.log.Warn("schedule passed over earlier fire times", "schedule", sc.name, "from", first,
			"fired", at, "missed", map[bool]string{true: "catch_up", false: "skip"}[sc.catchUp])
	}
	c.commitSchedOp(sc.name, schedFired, at)
}

// commitSchedOp records one change of schedule name.
func (c *Core) commitSchedOp(name string, op schedOp, at int64) bool {
	r := c.newRecord(recSchedOp)
	r.sc.name, r.sc.op, r.sc.last = name, op, at
	return c.commit(r)
}

// schedSubmit builds the submit a body makes, keyed for fire time at
// (at 0: a check at schedule_add, with the longest key).
func schedSubmit(name string, body []kv, at int64) *wire.Message {
	m := &wire.Message{Fields: make([]wire.Field, 0, len(body)+3)}
	m.Fields = append(m.Fields, wire.Field{Key: "type", Value: string(wire.KindSubmit)})
	for _, p := range body {
		m.Fields = append(m.Fields, wire.Field{Key: p.k, Value: p.v})
	}
	key := schedKey(name, at)
	if at == 0 {
		key = schedKey(name, math.MinInt64)
	}
	m.Fields = append(m.Fields, wire.Field{Key: "key", Value: key}, wire.Field{Key: "trace_id", Value: key})
	return m
}

// runBody reports whether the body is a run's (run.* keys).
func (f *schedFields) runBody() bool {
	return slices.ContainsFunc(f.body, func(p kv) bool { return strings.HasPrefix(p.k, runPrefix) })
}

// schedRunSubmit builds the run_submit a run body makes, keyed for fire
// time at as schedSubmit does.
func schedRunSubmit(name string, body []kv, at int64) *wire.Message {
	m := schedSubmit(name, nil, at)
	m.Fields[0].Value = string(wire.KindRunSubmit)
	for _, p := range body {
		m.Fields = append(m.Fields, wire.Field{Key: strings.TrimPrefix(p.k, runPrefix), Value: p.v})
	}
	return m
}

// fireRun submits a run body for fire time at, as run_submit would. A
// run key already known means that time fired before a crash.
func (c *Core) fireRun(sc *schedule, at int64) *refusal {
	spec, err := c.ParseRunSpec(schedRunSubmit(sc.name, sc.body, at))
	if err != nil {
		return &refusal{wire.CodeBadRequest, err.Error()}
	}
	if _, er := c.SubmitRun(spec); er != nil {
		return &refusal{er.Code, er.Message}
	}
	return nil
}

// fireBody submits sc's body for fire time at, as a client's submit
// would be: the same checks, defaults and caps. A key already known
// means that time fired before a crash: nothing new is made.
func (c *Core) fireBody(sc *schedule, at int64) *refusal {
	if sc.runBody() {
		return c.fireRun(sc, at)
	}
	m := schedSubmit(sc.name, sc.body, at)
	var f submitFields
	f.scan(m)
	var s submitReq
	if err := c.parseSubmit(&f, &s); err != nil {
		return &refusal{wire.CodeBadRequest, err.Error()}
	}
	c.policyDefaults(&f, &s)
	if rf := c.submitShape(&s, f.args); rf != nil {
		return rf
	}
	if _, ok := c.keys[s.key]; ok {
		return nil
	}
	if rf := c.submitRoom(&s, f.args); rf != nil {
		return rf
	}
	r := c.newTaskRecord(&s, &f, m)
	if !c.commit(r) {
		return &refusal{wire.CodeBadRequest, "submit refused"}
	}
	t := c.tasks.get(r.id)
	c.logTransition(t, 0, t.state, "schedule")
	c.endAtOnce(r.id, &s, "schedule")
	return nil
}

// applySched adds a schedule (a record or a snapshot entry). A zone or
// expression this host cannot read keeps the schedule without firings.
func (c *Core) applySched(r *record) {
	sc := &schedule{schedFields: r.sc}
	sc.body = slices.Clone(r.sc.body)
	sc.op = 0
	var err error
	if sc.loc, err = c.loadZone(sc.tz); err == nil {
		sc.spec, err = parseCron(sc.cron)
	}
	if err != nil {
		sc.spec = nil
		c.log.Error("schedule cannot fire here: its zone or expression cannot be read", "schedule", sc.name,
			"cron", sc.cron, "tz", sc.tz, "err", err)
	}
	sc.next = sc.after(sc.last)
	c.scheds[sc.name] = sc
	c.refreshSchedWake()
}

// applySchedOp changes a schedule as checkSched allowed.
func (c *Core) applySchedOp(r *record) {
	sc := c.scheds[r.sc.name]
	switch r.sc.op {
	case schedFired, schedPassed:
		sc.last, sc.retryAt = r.sc.last, 0
		if r.sc.op == schedFired {
			sc.fires++
			sc.lastFired = r.sc.last
		}
		sc.next = sc.after(sc.last)
	case schedPaused:
		sc.paused = true
	case schedResumed:
		sc.paused = false
	case schedDeleted:
		delete(c.scheds, sc.name)
	}
	c.refreshSchedWake()
}

// checkSched validates a schedule record against the schedules.
func (c *Core) checkSched(r *record) error {
	sc := c.scheds[r.sc.name]
	if r.kind == recSched {
		if !validSchedName(r.sc.name) || sc != nil {
			return fmt.Errorf("%w: schedule %q added twice or badly named", ErrCorrupt, r.sc.name)
		}
		return nil
	}
	if sc == nil {
		return fmt.Errorf("%w: change of unknown schedule %q", ErrCorrupt, r.sc.name)
	}
	switch r.sc.op {
	case schedFired, schedPassed:
		if r.sc.last <= sc.last {
			return fmt.Errorf("%w: schedule %q fire time %d not after %d", ErrCorrupt, sc.name, r.sc.last, sc.last)
		}
	case schedPaused, schedResumed, schedDeleted:
	default:
		return fmt.Errorf("%w: schedule %q change %d", ErrCorrupt, sc.name, r.sc.op)
	}
	return nil
}

// scheduleEntries returns every schedule as a snapshot entry, by name.
func (c *Core) scheduleEntries() []record {
	out := make([]record, 0, len(c.scheds))
	for _, sc := range c.scheds {
		f := sc.schedFields
		f.op = 0
		out = append(out, record{kind: recSched, sc: f})
	}
	slices.SortFunc(out, func(a, b record) int { return strings.Compare(a.sc.name, b.sc.name) })
	return out
}

// Schedules returns how many schedules are kept, for stats and metrics.
func (c *Core) Schedules() int { return len(c.scheds) }
