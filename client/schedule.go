package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// ScheduleRequest is a schedule_add (protocol section 8.12). It holds a
// cron expression and the task each firing submits.
type ScheduleRequest struct {
	Name    string        // 1 to 128 bytes of A-Z a-z 0-9 _ . -
	Cron    string        // five fields, six with seconds first, or @daily and kin
	Zone    string        // IANA zone the fields are read in; "" is UTC
	Jitter  time.Duration // each firing waits a delay below it, fixed per fire time
	CatchUp bool          // fire once for the latest missed time (missed=catch_up); else skip
	// Task is the body. Its Key, TraceID and DependsOn must be empty. Each
	// firing is keyed and traced by the schedule and its fire time.
	Task SubmitRequest
	// Run, when set, is the body instead of Task. Each firing submits this
	// run (the runs group). Its Key and TraceID must be empty.
	Run *RunRequest
}

// ScheduleAdded is the `schedule_added` reply.
type ScheduleAdded struct {
	Name      string    `json:"name"`
	NextFire  time.Time `json:"next_fire"`
	Duplicate bool      `json:"duplicate"` // the same schedule existed: nothing changed
}

// Schedule is one schedule of a `schedules` reply.
type Schedule struct {
	Name     string        `json:"name"`
	Cron     string        `json:"cron"`
	Zone     string        `json:"tz"`
	Jitter   time.Duration `json:"jitter_ns"`
	Missed   string        `json:"missed"` // skip or catch_up
	Paused   bool          `json:"paused"`
	Fires    uint64        `json:"fires"`               // firings made
	LastFire time.Time     `json:"last_fire,omitzero"`  // the latest fire time that fired
	NextFire time.Time     `json:"next_fire,omitzero"`  // absent while paused
	TaskType string        `json:"task_type,omitempty"` // a task body's type
	Run      string        `json:"run,omitempty"`       // a run body's name
	Cut      bool          `json:"cut,omitempty"`       // too large for a reply: only name and paused shown
	// Extra holds the keys of a newer server this client does not know.
	Extra map[string]string `json:"extra,omitempty"`
}

// SchedulePage is one `schedules` reply. Next is set when more follow.
type SchedulePage struct {
	Schedules []Schedule `json:"schedules"`
	Next      string     `json:"next,omitempty"`
}

// ScheduleAdd adds a schedule (`schedule_add`). It needs the admin proof
// where the server has an admin token. Adding the same schedule again
// returns Duplicate. Another with its name is an error.
func (c *Client) ScheduleAdd(ctx context.Context, r ScheduleRequest) (ScheduleAdded, error) {
	const typ = wire.KindScheduleAdd
	switch {
	case r.Run != nil && r.Task.Type != "":
		return ScheduleAdded{}, fmt.Errorf("%s: the body is a task or a run, not both", typ)
	case r.Run != nil && (r.Run.Key != "" || r.Run.TraceID != ""):
		return ScheduleAdded{}, fmt.Errorf("%s: a schedule's run has no key or trace id: each firing is keyed by its fire time", typ)
	case r.Task.Key != "", r.Task.TraceID != "", len(r.Task.DependsOn) > 0:
		return ScheduleAdded{}, fmt.Errorf("%s: a schedule's task has no key, trace id or dependencies: each firing is keyed by its fire time", typ)
	case r.Jitter < 0:
		return ScheduleAdded{}, fmt.Errorf("%s: negative jitter %v", typ, r.Jitter)
	}
	var body func(*wire.Builder)
	var err error
	if r.Run != nil {
		body, err = runBody(*r.Run)
	} else {
		body, err = r.Task.fill(false)
	}
	if err != nil {
		return ScheduleAdded{}, fmt.Errorf("%s: %w", typ, err)
	}
	m, err := c.roundTrip(ctx, typ, wire.KindScheduleAdded, idempotent, func(b *wire.Builder) {
		b.Str("name", r.Name)
		b.Str("cron", r.Cron)
		if r.Zone != "" {
			b.Str("tz", r.Zone)
		}
		if r.Jitter > 0 {
			b.Uint("jitter_ms", millis(r.Jitter))
		}
		if r.CatchUp {
			b.Str("missed", "catch_up")
		}
		body(b)
	})
	if err != nil {
		return ScheduleAdded{}, err
	}
	next, err := m.Int("next_fire")
	if err != nil {
		return ScheduleAdded{}, fmt.Errorf("%s: bad reply: %w", typ, err)
	}
	return ScheduleAdded{Name: m.Value("name"), NextFire: time.Unix(next, 0).UTC(), Duplicate: m.Value("duplicate") == "true"}, nil
}

// runBody writes a run's run_submit keys, each after "run.", as
// schedule_add takes a run body.
func runBody(r RunRequest) (func(*wire.Builder), error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	b := wire.Begin(nil, wire.KindRunSubmit)
	r.fill(false)(&b)
	frame, err := b.Finish()
	if err != nil {
		return nil, err
	}
	var d wire.Decoder
	m, _, err := d.Decode(frame)
	if err != nil {
		return nil, err
	}
	fields := m.Fields[1:] // after type; they borrow frame, kept alive here
	return func(b *wire.Builder) {
		for _, f := range fields {
			b.Str("run."+f.Key, f.Value)
		}
	}, nil
}

// SchedulePause stops a schedule's firings. changed is false when it was
// paused already.
func (c *Client) SchedulePause(ctx context.Context, name string) (changed bool, err error) {
	m, err := c.scheduleNamed(ctx, wire.KindSchedulePause, wire.KindSchedulePaused, name)
	return err == nil && m.Value("changed") == "true", err
}

// ScheduleResume starts a paused schedule's firings again. changed is
// false when it was not paused.
func (c *Client) ScheduleResume(ctx context.Context, name string) (changed bool, err error) {
	m, err := c.scheduleNamed(ctx, wire.KindScheduleResume, wire.KindScheduleResumed, name)
	return err == nil && m.Value("changed") == "true", err
}

// ScheduleDelete forgets a schedule. The tasks it made stay. It is sent
// once. After a lost connection its outcome is unknown (ErrOutcomeUnknown).
func (c *Client) ScheduleDelete(ctx context.Context, name string) error {
	_, err := c.scheduleNamed(ctx, wire.KindScheduleDelete, wire.KindScheduleDeleted, name)
	return err
}

func (c *Client) scheduleNamed(ctx context.Context, typ, reply wire.Kind, name string) (*wire.Message, error) {
	if name == "" {
		return nil, fmt.Errorf("%s: empty schedule name", typ)
	}
	k := idempotent
	if typ == wire.KindScheduleDelete {
		k = oneShot // sent again after it took effect, it would be refused
	}
	return c.roundTrip(ctx, typ, reply, k, func(b *wire.Builder) { b.Str("name", name) })
}

// ScheduleGet returns the schedule named name.
func (c *Client) ScheduleGet(ctx context.Context, name string) (Schedule, error) {
	if name == "" {
		return Schedule{}, fmt.Errorf("%s: empty schedule name", wire.KindScheduleList)
	}
	page, err := c.scheduleList(ctx, func(b *wire.Builder) { b.Str("name", name) })
	if err != nil {
		return Schedule{}, err
	}
	if len(page.Schedules) != 1 {
		return Schedule{}, fmt.Errorf("%s: %d schedules for name %q", wire.KindScheduleList, len(page.Schedules), name)
	}
	return page.Schedules[0], nil
}

// ScheduleList returns one page of schedules by name, after after. ""
// starts from the first. limit 0 is the server's default.
func (c *Client) ScheduleList(ctx context.Context, after string, limit int) (SchedulePage, error) {
	return c.scheduleList(ctx, func(b *wire.Builder) {
		if after != "" {
			b.Str("after", after)
		}
		if limit > 0 {
			b.Uint("limit", uint64(limit))
		}
	})
}

// ScheduleListAll follows ScheduleList to the last page.
func (c *Client) ScheduleListAll(ctx context.Context) ([]Schedule, error) {
	var all []Schedule
	after := ""
	for {
		page, err := c.ScheduleList(ctx, after, 0)
		if err != nil {
			return all, err
		}
		all = append(all, page.Schedules...)
		if page.Next == "" {
			return all, nil
		}
		if page.Next <= after {
			return all, errors.New("schedule_list: next does not move on; the list is incomplete")
		}
		after = page.Next
	}
}

func (c *Client) scheduleList(ctx context.Context, fill func(*wire.Builder)) (SchedulePage, error) {
	m, err := c.roundTrip(ctx, wire.KindScheduleList, wire.KindSchedules, idempotent, fill)
	if err != nil {
		return SchedulePage{}, err
	}
	return parseSchedules(m)
}

// parseSchedules reads a `schedules` reply, with its sched.<i>.<field> keys.
func parseSchedules(m *wire.Message) (SchedulePage, error) {
	bad := func(err error) (SchedulePage, error) {
		return SchedulePage{}, fmt.Errorf("schedule_list: bad reply: %w", err)
	}
	n, err := m.Uint("count")
	if err != nil {
		return bad(err)
	}
	if n > wire.MaxKeys {
		return bad(fmt.Errorf("count %d", n))
	}
	page := SchedulePage{Schedules: make([]Schedule, n), Next: m.Value("next")}
	for _, f := range m.Fields {
		rest, ok := strings.CutPrefix(f.Key, "sched.")
		if !ok {
			continue
		}
		is, field, ok := strings.Cut(rest, ".")
		i, err := strconv.ParseUint(is, 10, 32)
		if !ok || err != nil || i >= n {
			return bad(fmt.Errorf("key %q", f.Key))
		}
		if err := page.Schedules[i].set(field, f.Value); err != nil {
			return bad(fmt.Errorf("%s: %w", f.Key, err))
		}
	}
	for i := range page.Schedules {
		if page.Schedules[i].Name == "" {
			return bad(fmt.Errorf("schedule %d has no name", i))
		}
	}
	return page, nil
}

// set reads one field of a schedule's row.
func (s *Schedule) set(field, v string) error {
	unix := func(t *time.Time) error {
		n, err := strconv.ParseInt(v, 10, 64)
		*t = time.Unix(n, 0).UTC()
		return err
	}
	var err error
	switch field {
	case "name":
		s.Name = v
	case "cron":
		s.Cron = v
	case "tz":
		s.Zone = v
	case "jitter_ms":
		var ms uint64
		ms, err = strconv.ParseUint(v, 10, 32)
		s.Jitter = time.Duration(ms) * time.Millisecond
	case "missed":
		s.Missed = v
	case "paused":
		s.Paused, err = strconv.ParseBool(v)
	case "fires":
		s.Fires, err = strconv.ParseUint(v, 10, 64)
	case "last_fire":
		err = unix(&s.LastFire)
	case "next_fire":
		err = unix(&s.NextFire)
	case "task_type":
		s.TaskType = v
	case "run":
		s.Run = v
	case "cut":
		s.Cut = v == "true"
	default:
		if s.Extra == nil {
			s.Extra = map[string]string{}
		}
		s.Extra[field] = v
	}
	return err
}
