package core

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Counts returns the number of tasks in each state, indexed by State.
func (c *Core) Counts() [NumStates + 1]int {
	return c.counts
}

// NextTaskID returns the id the next submit will get.
func (c *Core) NextTaskID() uint64 { return c.nextID }

// SkipIDs moves the next task id n further, after a recovery that lost
// records. Those may have handed out ids the state no longer shows. Ids
// are never reused (spec section 5). The skip is a change record of
// its own.
func (c *Core) SkipIDs(n uint64) {
	r := c.newRecord(recSkipIDs)
	r.nextID = c.nextID + n
	if c.commit(r) {
		c.log.Warn("task ids skipped: records were lost", "skipped", n, "next_task_id", c.nextID)
	}
}

// SharedState returns a copy of the shared state and its version.
func (c *Core) SharedState() (map[string]string, uint64) {
	m := make(map[string]string, len(c.state))
	for k, v := range c.state {
		m[k] = v
	}
	return m, c.stateVer
}

// ExecutorInfo is a read-only view of one registered executor.
type ExecutorInfo struct {
	ID        string   `json:"executor_id"`
	Types     []string `json:"task_types"`
	Slots     int      `json:"slots"`
	Load      int      `json:"load"`
	Connected bool     `json:"connected"`
}

// Executors returns the registered executors in registration order.
// Before recovery ends, their load is not counted yet.
func (c *Core) Executors() []ExecutorInfo {
	list := make([]*executor, 0, len(c.execs))
	for _, e := range c.execs {
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b *executor) int { return cmp.Compare(a.regSeq, b.regSeq) })
	out := make([]ExecutorInfo, 0, len(list))
	for _, e := range list {
		info := ExecutorInfo{ID: e.id, Slots: e.slots, Load: e.load, Connected: e.connected()}
		for _, tt := range e.types {
			info.Types = append(info.Types, tt.name)
		}
		out = append(out, info)
	}
	return out
}

// Record is a decoded change record or snapshot entry, for humans.
type Record struct {
	Kind    string
	TaskIDs []uint64 // the tasks it concerns
	Text    string   // its fields, key=value, space separated
}

// DescribeRecord decodes a log record or snapshot entry for the offline
// inspector.
func DescribeRecord(payload []byte) (Record, error) {
	var r record
	if err := decodeRecord(payload, &r); err != nil {
		return Record{}, err
	}
	d := Record{Kind: r.kind.String()}
	var f []string
	add := func(k string, v any) { f = append(f, fmt.Sprintf("%s=%v", k, v)) }
	ms := func(k string, v int64) {
		if v != 0 {
			add(k, stamp(v))
		}
	}
	switch r.kind {
	case recNew, recDispatch, recStart, recBack, recRetry, recArm, recReady, recEnd, recRequeue, snapTask:
		d.TaskIDs = []uint64{r.id}
		add("task_id", r.id)
	case recDrop:
		d.TaskIDs = slices.Clone(r.ids)
		add("task_ids", r.ids)
	}
	switch r.kind {
	case recNew:
		add("state", r.state)
		ms("at", r.at)
		r.describeFields(add)
		if r.args != "" {
			add("args", strings.ReplaceAll(r.args, "\n", " "))
		}
	case recDispatch:
		add("version", r.version)
		add("attempt", r.attempt)
		add("executor", r.exec)
		ms("at", r.at)
	case recStart:
		add("version", r.version)
		ms("at", r.at)
		ms("deadline", r.due)
	case recBack:
		ms("at", r.at)
		add("why", r.why)
	case recRetry:
		ms("at", r.at)
		ms("retry_at", r.due)
		add("error", r.errText)
	case recArm:
		ms("retry_at", r.due)
	case recReady:
		ms("at", r.at)
		if r.filled {
			add("args", strings.ReplaceAll(r.args, "\n", " "))
		}
	case recRun, recRunComp, recRunResume, recRunCancel, recRunDrop, snapRunMeta, snapRun:
		d.TaskIDs = describeRun(&r, add)
	case recEnd:
		add("state", r.state)
		ms("at", r.at)
		if r.errText != "" {
			add("error", r.errText)
		}
		if r.out != "" {
			add("out", strings.ReplaceAll(r.out, "\n", " "))
		}
		for _, p := range r.sets {
			add("state."+p.k, p.v)
		}
	case recRequeue:
		add("state", r.state)
		add("version", r.version)
		add("attempt", r.attempt)
		ms("at", r.at)
		if r.why != "" {
			add("reason", r.why)
		}
	case recExecReg:
		add("executor", r.exec)
		add("task_types", strings.Join(r.types, ","))
		add("slots", r.slots)
	case recExecGone:
		add("executor", r.exec)
		add("why", r.why)
	case snapMeta:
		add("next_task_id", r.nextID)
		add("state_version", r.stateVer)
		add("next_epoch", r.epoch)
	case recSkipIDs:
		add("next_task_id", r.nextID)
	case recEpoch:
		add("epoch", r.epoch)
	case recStateFix:
		if r.on {
			add("set", r.key)
			add("value", r.args)
		} else {
			add("del", r.key)
		}
		add("state_version", r.stateVer)
	case recPause:
		add("task_type", r.typ)
		add("paused", r.on)
	case recExecTypes:
		add("executor", r.exec)
		add("task_types", strings.Join(r.types, ","))
	case snapState:
		add(r.key, r.args)
	case snapTask:
		add("state", r.state)
		add("version", r.version)
		add("attempt", r.attempt)
		if r.exec != "" {
			add("executor", r.exec)
		}
		r.describeFields(add)
	}
	d.Text = strings.Join(f, " ")
	return d, nil
}

// Discard is an Effects that drops everything, for offline use of a core
// (the inspector replays a data dir into one).
type Discard struct{}

// Record drops the record.
func (Discard) Record([]byte) uint64 { return 0 }

// Send drops the frame.
func (Discard) Send(PeerID, []byte, Wait) {}

// SendTask drops the frame.
func (Discard) SendTask(PeerID, []byte, uint64) {}

// Close does nothing.
func (Discard) Close(PeerID) {}

// describeFields adds a task's fields, v1's then the field table's, to the
// inspector's line.
func (r *record) describeFields(add func(k string, v any)) {
	for i := range v1Fields {
		if text := v1Fields[i].text; text != nil {
			text(r, add)
		}
	}
	for k, v := range r.fields.all() {
		add(k, v)
	}
}
