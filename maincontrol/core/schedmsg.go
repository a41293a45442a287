package core

import (
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// The schedules group's requests (protocol section 8.12).

// schedKeys are schedule_add's own keys; the others are its body.
var schedKeys = []string{"type", "req", "name", "cron", "tz", "jitter_ms", "missed"}

// runPrefix marks a run body's keys: run_submit's, each after "run.".
const runPrefix = "run."

// schedNotRun are run_submit keys a run body may not give, as
// schedNotBody for a task.
var schedNotRun = []string{"run.key", "run.trace_id", "run.wait"}

// schedNotBody are submit keys a body may not give: the firing sets
// the first two, and the last two make no sense on every firing.
var schedNotBody = []string{"key", "trace_id", "wait", "depends_on"}

// bodyKeyCost is what a body key costs besides its bytes: its two
// string headers. The byte cap counts it, so many tiny keys cost too.
const bodyKeyCost = 32

// maxSchedListLimit bounds a schedule_list page: a dozen keys each.
const maxSchedListLimit = 100

// bodyKey reports whether k is a submit key a task body may hold: an
// arg or a task field of either table (schedNotBody is refused first).
func bodyKey(k string) bool {
	if strings.HasPrefix(k, wire.PrefixArg) {
		return true
	}
	for i := range v1Fields {
		if v1Fields[i].key.String() == k {
			return true
		}
	}
	var f fieldVals
	return f.set(k, "")
}

// parseSchedule reads a schedule_add into the fields of its record,
// checking each value; the body is checked as a submit would be.
func (c *Core) parseSchedule(m *wire.Message, now int64) (*schedule, error) {
	sc := &schedule{}
	var err error
	if sc.name, err = requiredText(m, "name"); err != nil {
		return nil, err
	}
	if !validSchedName(sc.name) {
		return nil, &wire.ValueError{Key: "name", Reason: "1 to " + strconv.Itoa(maxSchedNameLen) + " bytes of A-Z a-z 0-9 _ . -"}
	}
	if sc.cron, err = requiredText(m, "cron"); err != nil {
		return nil, err
	}
	if sc.spec, err = parseCron(sc.cron); err != nil {
		return nil, &wire.ValueError{Key: "cron", Reason: err.Error()}
	}
	sc.tz = "UTC"
	if v, ok := m.Get("tz"); ok {
		sc.tz = v
	}
	if sc.loc, err = c.loadZone(sc.tz); err != nil {
		return nil, &wire.ValueError{Key: "tz", Reason: "unknown time zone " + strconv.Quote(clipText(sc.tz)) + ": " + err.Error()}
	}
	if sc.jitterMs, err = m.UintOr("jitter_ms", 0); err != nil {
		return nil, err
	}
	switch v := m.Value("missed"); v {
	case "", "skip":
	case "catch_up":
		sc.catchUp = true
	default:
		return nil, &wire.ValueError{Key: "missed", Reason: "must be skip or catch_up"}
	}
	size := len(sc.name) + len(sc.cron) + len(sc.tz)
	for _, f := range m.Fields {
		switch {
		case slices.Contains(schedKeys, f.Key):
			continue
		case slices.Contains(schedNotBody, f.Key):
			return nil, &wire.ValueError{Key: f.Key, Reason: "a schedule sets or refuses it: each firing is keyed by the schedule and its fire time"}
		case slices.Contains(schedNotRun, f.Key):
			return nil, &wire.ValueError{Key: f.Key, Reason: "a schedule sets or refuses it: each firing is keyed by the schedule and its fire time"}
		case strings.HasPrefix(f.Key, runPrefix):
		case !bodyKey(f.Key):
			return nil, &wire.ValueError{Key: f.Key, Reason: "not a submit key a schedule's body may hold"}
		}
		sc.body = append(sc.body, kv{f.Key, f.Value})
		size += len(f.Key) + len(f.Value) + bodyKeyCost
	}
	if size > c.cfg.MaxScheduleBytes {
		return nil, &wire.ValueError{Key: "name", Reason: "the schedule holds " + strconv.Itoa(size) +
			" bytes, more than --max-schedule-bytes " + strconv.Itoa(c.cfg.MaxScheduleBytes)}
	}
	slices.SortFunc(sc.body, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	check := c.checkBody
	if sc.runBody() {
		check = c.checkRunBody
	}
	if err := check(sc); err != nil {
		return nil, err
	}
	sc.last = now / 1000
	if sc.next = sc.after(sc.last); sc.next == 0 {
		return nil, &wire.ValueError{Key: "cron", Reason: "no fire time within five years"}
	}
	if sc.jitterMs > maxJitterMs {
		return nil, &wire.ValueError{Key: "jitter_ms", Reason: "at most " + strconv.Itoa(maxJitterMs)}
	}
	if gap := sc.minGapMs(sc.last); sc.jitterMs > 0 && int64(sc.jitterMs) >= gap {
		return nil, &wire.ValueError{Key: "jitter_ms", Reason: "must be below " + strconv.FormatInt(gap, 10) +
			" ms, the shortest gap between the coming fire times"}
	}
	return sc, nil
}

// checkBody checks a task body as the submit of a firing would be.
func (c *Core) checkBody(sc *schedule) error {
	m := schedSubmit(sc.name, sc.body, 0)
	var f submitFields
	f.scan(m)
	var s submitReq
	if err := c.parseSubmit(&f, &s); err != nil {
		return err
	}
	c.policyDefaults(&f, &s)
	if rf := c.submitShape(&s, f.args); rf != nil {
		return &wire.ValueError{Key: "task_type", Reason: rf.msg}
	}
	return nil
}

// checkRunBody checks a run body as the run_submit of a firing would be.
// A body with task keys beside the run keys is neither.
func (c *Core) checkRunBody(sc *schedule) error {
	for _, p := range sc.body {
		if !strings.HasPrefix(p.k, runPrefix) {
			return &wire.ValueError{Key: p.k, Reason: "a schedule's body is a task or a run (run.* keys), not both"}
		}
	}
	_, err := c.ParseRunSpec(schedRunSubmit(sc.name, sc.body, 0))
	if ve, ok := err.(*wire.ValueError); ok {
		return &wire.ValueError{Key: runPrefix + ve.Key, Reason: ve.Reason}
	}
	return err
}

// sameSchedule reports whether a and b have the same definition.
func sameSchedule(a, b *schedule) bool {
	return a.name == b.name && a.cron == b.cron && a.tz == b.tz && a.jitterMs == b.jitterMs &&
		a.catchUp == b.catchUp && slices.Equal(a.body, b.body)
}

// scheduleAdd answers schedule_add.
func (c *Core) scheduleAdd(p *peer, m *wire.Message, req string) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	sc, err := c.parseSchedule(m, c.now())
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if old := c.scheds[sc.name]; old != nil {
		if !sameSchedule(old, sc) {
			c.sendError(p, req, wire.CodeIllegalTransition, "schedule "+sc.name+
				" exists with another definition: delete it first")
			return
		}
		b := c.begin(wire.KindScheduleAdded, req)
		b.Str("name", old.name)
		b.Int("next_fire", old.next)
		b.BoolK(kDuplicate, true)
		c.send(p.id, &b)
		return
	}
	if len(c.scheds) >= c.cfg.MaxSchedules {
		c.badRequest(p, req, &wire.ValueError{Key: "name", Reason: strconv.Itoa(len(c.scheds)) +
			" schedules are kept, --max-schedules: delete one first"})
		return
	}
	if !c.writable(p, req) {
		return
	}
	r := c.newRecord(recSched)
	r.sc = sc.schedFields
	r.sc.name, r.sc.cron, r.sc.tz = strings.Clone(sc.name), strings.Clone(sc.cron), strings.Clone(sc.tz)
	for i := range r.sc.body {
		r.sc.body[i] = kv{strings.Clone(r.sc.body[i].k), strings.Clone(r.sc.body[i].v)}
	}
	if !c.commit(r) {
		c.sendError(p, req, wire.CodeBadRequest, "schedule refused")
		return
	}
	added := c.scheds[sc.name]
	c.log.Info("schedule added", append(c.askedBy(p), "schedule", added.name, "cron", added.cron, "tz", added.tz,
		"next_fire", added.next)...)
	b := c.begin(wire.KindScheduleAdded, req)
	b.Str("name", added.name)
	b.Int("next_fire", added.next)
	c.confirm(p.id, &b)
}

// namedSchedule returns the schedule a request names, or answers
// bad_request and returns nil.
func (c *Core) namedSchedule(p *peer, m *wire.Message, req string) *schedule {
	name, err := requiredText(m, "name")
	if err != nil {
		c.badRequest(p, req, err)
		return nil
	}
	sc := c.scheds[name]
	if sc == nil {
		c.badRequest(p, req, &wire.ValueError{Key: "name", Reason: "no schedule named " + strconv.Quote(clipText(name))})
	}
	return sc
}

// scheduleChange answers schedule_pause, schedule_resume and
// schedule_delete.
func (c *Core) scheduleChange(p *peer, m *wire.Message, req string, op schedOp) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	sc := c.namedSchedule(p, m, req)
	if sc == nil {
		return
	}
	reply := map[schedOp]wire.Kind{schedPaused: wire.KindSchedulePaused, schedResumed: wire.KindScheduleResumed,
		schedDeleted: wire.KindScheduleDeleted}[op]
	name := sc.name
	if op != schedDeleted && sc.paused == (op == schedPaused) {
		b := c.begin(reply, req)
		b.Str("name", name)
		b.Bool("changed", false)
		c.send(p.id, &b)
		return
	}
	if !c.writable(p, req) || !c.commitSchedOp(name, op, 0) {
		return
	}
	c.log.Info("schedule "+map[schedOp]string{schedPaused: "paused", schedResumed: "resumed", schedDeleted: "deleted"}[op],
		append(c.askedBy(p), "schedule", name)...)
	b := c.begin(reply, req)
	b.Str("name", name)
	if op != schedDeleted {
		b.Bool("changed", true)
	}
	if op == schedResumed {
		if next := sc.upcoming(c.now()); next != 0 {
			b.Int("next_fire", next)
		}
	}
	c.confirm(p.id, &b)
}

// scheduleRow is what schedule_list shows of one schedule.
func scheduleRow(sc *schedule) []kv {
	row := []kv{{"name", sc.name}, {"cron", sc.cron}, {"tz", sc.tz},
		{"jitter_ms", strconv.FormatUint(sc.jitterMs, 10)},
		{"missed", map[bool]string{true: "catch_up", false: "skip"}[sc.catchUp]},
		{"paused", strconv.FormatBool(sc.paused)}, {"fires", strconv.FormatUint(sc.fires, 10)}}
	if sc.lastFired != 0 {
		row = append(row, kv{"last_fire", strconv.FormatInt(sc.lastFired, 10)})
	}
	if !sc.paused && sc.next != 0 {
		row = append(row, kv{"next_fire", strconv.FormatInt(sc.next, 10)})
	}
	for _, b := range sc.body {
		switch b.k {
		case "task_type":
			row = append(row, kv{"task_type", b.v})
		case runPrefix + "name":
			row = append(row, kv{"run", b.v})
		}
	}
	return row
}

// scheduleList answers schedule_list: schedules by name, a page at a time.
func (c *Core) scheduleList(p *peer, m *wire.Message, req string) {
	limit, err := m.UintOr("limit", maxSchedListLimit)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if limit < 1 || limit > maxSchedListLimit {
		c.badRequest(p, req, &wire.ValueError{Key: "limit", Reason: "must be 1 to " + strconv.Itoa(maxSchedListLimit)})
		return
	}
	var list []*schedule
	if m.Has("name") {
		sc := c.namedSchedule(p, m, req)
		if sc == nil {
			return
		}
		list = append(list, sc)
	} else {
		after := m.Value("after")
		for _, sc := range c.scheds {
			if sc.name > after {
				list = append(list, sc)
			}
		}
		slices.SortFunc(list, func(a, b *schedule) int { return strings.Compare(a.name, b.name) })
	}
	b := c.begin(wire.KindSchedules, req)
	// Room kept for count and next: a name is at most 128 bytes.
	room := c.cfg.MaxFrame - len("\ncount=") - 20 - len("\nnext=") - maxSchedNameLen
	n := 0
	for _, sc := range list {
		if uint64(n) == limit {
			break
		}
		row := scheduleRow(sc)
		prefix := "sched." + strconv.Itoa(n) + "."
		fits := func() bool {
			size := 0
			for _, f := range row {
				size += 2 + len(prefix) + len(f.k) + wire.EscapedLen(f.v)
			}
			return b.Len()+size <= room && b.Keys()+len(row)+2 <= wire.MaxKeys
		}
		if !fits() && n == 0 {
			// Alone too large for max_frame: the row is cut, so the page
			// still moves on.
			row = []kv{{"name", sc.name}, {"paused", strconv.FormatBool(sc.paused)}, {"cut", "true"}}
		}
		if !fits() {
			break
		}
		for _, f := range row {
			b.Str(prefix+f.k, f.v)
		}
		n++
	}
	b.UintK(kCount, uint64(n))
	if n < len(list) {
		b.Str("next", list[n-1].name)
	}
	c.send(p.id, &b)
}
