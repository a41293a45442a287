package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Bounds of a run (protocol section 8.10).
const (
	MaxRunSteps    = 100
	maxRunNameLen  = 128
	maxRunKeyLen   = 1024
	maxStepIDLen   = 64
	maxRunErrShown = 256 // an error in run_state is cut to this
)

// RunSpec is a parsed, checked run_submit: a run's name, key and steps.
// Schedules build one with ParseRunSpec and submit it with SubmitRun.
type RunSpec struct {
	Name   string
	Key    string // "" when none
	Trace  string
	Wait   bool
	steps  []stepSpec
	tbytes int64 // what its step tasks count toward --max-pending-bytes
}

// Steps returns the number of steps.
func (s *RunSpec) Steps() int { return len(s.steps) }

// stepSpec is one step as submitted.
type stepSpec struct {
	step runStep
	sub  submitReq // type, priority, attempts, timeout, delay, fields
}

// rawStep gathers one step's keys while the message is scanned.
type rawStep struct {
	f        submitFields
	id       string
	hasID    bool
	deps     string
	optional string
	when     string
	compType string
	hasComp  bool
	args     []kv
	compArgs []kv
}

// ParseRunSpec reads and checks a run_submit's keys (everything but the
// idempotency key's lookup and the caps, which SubmitRun applies). The
// spec copies what it keeps: m may borrow a read buffer.
func (c *Core) ParseRunSpec(m *wire.Message) (*RunSpec, error) {
	spec := &RunSpec{}
	name, ok := m.Get("name")
	if !ok {
		return nil, wire.MissingKey("name")
	}
	if name == "" || len(name) > maxRunNameLen {
		return nil, &wire.ValueError{Key: "name", Reason: "must be 1 to " + strconv.Itoa(maxRunNameLen) + " bytes"}
	}
	spec.Name = strings.Clone(name)
	if key, has := m.Get("key"); has {
		if key == "" || len(key) > maxRunKeyLen {
			return nil, &wire.ValueError{Key: "key", Reason: "must be 1 to " + strconv.Itoa(maxRunKeyLen) + " bytes"}
		}
		spec.Key = strings.Clone(key)
	}
	spec.Trace = strings.Clone(m.Value("trace_id"))
	var err error
	if spec.Wait, err = m.BoolOr("wait", false); err != nil {
		return nil, err
	}
	n, err := m.Uint("steps")
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxRunSteps {
		return nil, &wire.ValueError{Key: "steps", Reason: "must be 1 to " + strconv.Itoa(MaxRunSteps)}
	}
	raw := make([]rawStep, n)
	for i := range m.Fields {
		fl := &m.Fields[i]
		rest, ok := strings.CutPrefix(fl.Key, "step.")
		if !ok {
			continue
		}
		idx, field, ok := strings.Cut(rest, ".")
		k, good := parseStepIndex(idx)
		if !ok || !good || k >= n {
			return nil, &wire.ValueError{Key: fl.Key, Reason: "not step.<i>.<field> with <i> below steps=" + strconv.FormatUint(n, 10)}
		}
		raw[k].add(field, fl.Value)
	}
	ids := make(map[string]int, n)
	anc := make([][2]uint64, n) // each step's ancestors, as a bitset of indexes
	spec.steps = make([]stepSpec, n)
	for i := range raw {
		if err := c.parseStep(spec, raw, i, ids, anc); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

func parseStepIndex(s string) (uint64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	return wire.ParseUint(s)
}

// add files one step.<i>.<field> value.
func (r *rawStep) add(field, v string) {
	switch field {
	case "id":
		r.id, r.hasID = v, true
	case "type":
		r.setV1(v1Type, v)
	case "priority":
		r.setV1(v1Priority, v)
	case "max_attempts":
		r.setV1(v1MaxAttempts, v)
	case "timeout_ms":
		r.setV1(v1Timeout, v)
	case "delay_ms":
		r.setV1(v1Delay, v)
	case "depends_on":
		r.deps = v
	case "optional":
		r.optional = v
		r.f.fields.set(field, v)
	case "when":
		r.when = v
		r.f.fields.set(field, v)
	case "compensate.type":
		r.compType, r.hasComp = v, true
	default:
		switch {
		case strings.HasPrefix(field, wire.PrefixArg):
			r.args = append(r.args, kv{strings.Clone(field), strings.Clone(v)})
		case strings.HasPrefix(field, "compensate."+wire.PrefixArg):
			r.hasComp = true
			r.compArgs = append(r.compArgs, kv{strings.Clone(strings.TrimPrefix(field, "compensate.")), strings.Clone(v)})
		default:
			r.f.fields.set(field, v) // the task field table's rows (label); others are ignored
		}
	}
}

// setV1 files the value of a submit key a step takes as its own.
func (r *rawStep) setV1(i int, v string) { r.f.v1[i], r.f.given = v, r.f.given|1<<i }

// validStepID reports whether s is a step id: 1 to 64 bytes of
// A-Z a-z 0-9 _ -.
func validStepID(s string) bool {
	if s == "" || len(s) > maxStepIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !stepIDByte(s[i]) {
			return false
		}
	}
	return true
}

func stepIDByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// parseStep checks step i of raw into spec.
func (c *Core) parseStep(spec *RunSpec, raw []rawStep, i int, ids map[string]int, anc [][2]uint64) error {
	r := &raw[i]
	pre := "step." + strconv.Itoa(i) + "."
	if !r.hasID {
		return wire.MissingKey(pre + "id")
	}
	if !validStepID(r.id) {
		return &wire.ValueError{Key: pre + "id", Reason: "must be 1 to 64 bytes of A-Z a-z 0-9 _ -"}
	}
	if _, dup := ids[r.id]; dup {
		return &wire.ValueError{Key: pre + "id", Reason: "step id " + strconv.Quote(r.id) + " used twice"}
	}
	st := &spec.steps[i]
	// A step's depends_on names steps, not tasks: submit's own rule that
	// when needs depends_on is checked below, against the steps.
	when := r.f.fields[fieldWhen]
	r.f.fields[fieldWhen] = ""
	if err := c.parseSubmit(&r.f, &st.sub); err != nil {
		return prefixed(pre, err)
	}
	st.sub.fields[fieldWhen] = when
	c.policyDefaults(&r.f, &st.sub)
	s := &st.step
	s.id = strings.Clone(r.id)
	s.typ = strings.Clone(st.sub.typ)
	st.sub.typ = s.typ
	st.sub.fields.clone()
	s.priority, s.maxAtt, s.timeout = uint8(st.sub.priority), st.sub.maxAttempts, st.sub.timeoutMs
	s.label = st.sub.fields[fieldLabel]
	s.args = r.args
	var err error
	if s.optional, err = wire.BoolValue(pre+"optional", orFalse(r.optional)); err != nil {
		return err
	}
	switch r.when {
	case "":
	case "failed":
		s.whenFail = true
	default:
		return &wire.ValueError{Key: pre + "when", Reason: "must be failed"}
	}
	if r.deps != "" {
		ok := wire.ForEachItem(r.deps, func(d string) bool {
			j, known := ids[d]
			if !known {
				err = &wire.ValueError{Key: pre + "depends_on", Reason: "no step " + strconv.Quote(clipText(d)) + " listed before this one"}
				return false
			}
			for _, have := range s.deps {
				if int(have) == j {
					return true
				}
			}
			s.deps = append(s.deps, uint16(j))
			anc[i][j/64] |= 1 << (j % 64)
			anc[i][0] |= anc[j][0]
			anc[i][1] |= anc[j][1]
			return true
		})
		if err != nil {
			return err
		}
		if !ok {
			return &wire.ValueError{Key: pre + "depends_on", Reason: "bad list (comma-separated, no empty items, no spaces)"}
		}
	}
	if s.whenFail && len(s.deps) == 0 {
		return &wire.ValueError{Key: pre + "when", Reason: "when=failed needs depends_on"}
	}
	ids[s.id] = i
	// References: to ancestors only; a compensation's may name its step.
	if s.refs, err = checkRefs(pre, s.args, ids, anc[i], -1); err != nil {
		return err
	}
	if r.hasComp {
		s.comp = true
		s.compType = strings.Clone(r.compType)
		s.compArgs = r.compArgs
		if _, err = checkRefs(pre+"compensate.", s.compArgs, ids, anc[i], i); err != nil {
			return err
		}
	}
	return c.checkStepSize(spec, st, pre)
}

func orFalse(v string) string {
	if v == "" {
		return "false"
	}
	return v
}

// prefixed names a step's key in a value error of its submit keys.
func prefixed(pre string, err error) error {
	if ve, ok := err.(*wire.ValueError); ok {
		return &wire.ValueError{Key: pre + ve.Key, Reason: ve.Reason}
	}
	return err
}

// checkRefs checks the output references of args: each names an ancestor
// (or self, when self >= 0). It reports whether there are any.
func checkRefs(pre string, args []kv, ids map[string]int, anc [2]uint64, self int) (bool, error) {
	any := false
	for _, a := range args {
		var bad error
		err := walkRefs(a.v, func(string) {}, func(step, key string) bool {
			any = true
			j, ok := ids[step]
			if !ok || (j != self && anc[j/64]&(1<<(j%64)) == 0) {
				bad = &wire.ValueError{Key: pre + a.k, Reason: "reference ${steps." + clipText(step) + ".out." + key +
					"} names no step this one depends on"}
				return false
			}
			return true
		})
		if err != nil {
			return false, &wire.ValueError{Key: pre + a.k, Reason: err.Error()}
		}
		if bad != nil {
			return false, bad
		}
	}
	return any, nil
}
