package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// result handles an executor's result (spec section 4). Refusal reasons are
// checked in the spec's order. A refused result is never applied.
func (c *Core) result(p *peer, m *wire.Message) {
	id, ver, ok := c.parseDispatchToken(p, m)
	if !ok {
		return
	}
	var f resultFields
	f.scan(m)
	if !f.hasStatus {
		c.badRequest(p, "", wire.MissingKey("status"))
		return
	}
	if f.status != "succeeded" && f.status != "failed" {
		c.badRequest(p, "", &wire.ValueError{Key: "status", Reason: "must be succeeded or failed"})
		return
	}
	retryable := true
	if f.hasRetryable {
		var err error
		if retryable, err = wire.BoolValue("retryable", f.retryable); err != nil {
			c.badRequest(p, "", err)
			return
		}
	}
	e := p.exec
	t := c.tasks.get(id)
	var reason wire.Reason
	switch {
	case t == nil:
		reason = wire.ReasonUnknownTask
	case c.currentDispatch(e, id, ver) == nil:
		reason = wire.ReasonStale
	case t.state == Cancelled:
		reason = wire.ReasonCancelled
	case t.state != Running:
		reason = wire.ReasonIllegalTransition
	}
	if reason != "" {
		c.refuseResult(p, id, ver, reason, "")
		return
	}
	succeeded := f.status == "succeeded"
	errText := f.errText
	final := !succeeded && (!retryable || uint64(t.attempt) >= t.maxAttempts)
	bad := c.outTooLarge(t, m, errText, f.out, outputsStateLen(final))
	var sets []kv
	var growth int64
	if succeeded && f.hasState {
		var badState string
		sets, growth, badState = c.stateChanges(m)
		bad = firstSent(m, bad, badState)
	} else if !succeeded && f.hasState && c.debugEnabled() {
		c.log.Debug("state changes of a failed result ignored", "task_id", id, "version", ver, "executor", e.id)
	}
	if bad != "" {
		c.refuseResult(p, id, ver, wire.ReasonIllegalValue, bad)
		c.endTask(id, Failed, "illegal_value "+bad, "", 0, "illegal_value "+bad)
		return
	}
	out, outKeys := encodePrefixed(m, wire.PrefixOut, f.out)
	errText = strings.Clone(errText)
	if succeeded {
		stateVer := uint64(0)
		if len(sets) > 0 {
			stateVer = c.stateVer + 1
		}
		c.noteRun(t, c.now())
		if c.endWith(id, Succeeded, "", out, outKeys, sets, stateVer, 0, "succeeded") {
			c.stateBytes += growth
		}
	} else {
		c.failAttempt(id, retryable, false, false, errText, out, outKeys, "failed")
	}
	b := wire.Begin(c.frame[:0], wire.KindResultAck)
	b.UintK(kTaskID, id)
	b.UintK(kVersion, uint64(ver))
	b.BoolK(kAccepted, true)
	c.confirm(p.id, &b)
}

func (c *Core) refuseResult(p *peer, id uint64, ver uint64, reason wire.Reason, key string) {
	attrs := []any{"task_id", id, "version", ver, "executor", p.exec.id, "reason", string(reason)}
	if key != "" { // the offending key of an illegal_value
		attrs = append(attrs, "key", key)
	}
	c.log.Info("result refused and dropped", attrs...)
	b := wire.Begin(c.frame[:0], wire.KindResultAck)
	b.UintK(kTaskID, id)
	b.UintK(kVersion, uint64(ver))
	b.BoolK(kAccepted, false)
	b.StrK(kReason, string(reason))
	c.confirm(p.id, &b)
}

// firstSent returns whichever of the keys a and b (either may be "") comes
// first in m. The illegal_value key is the first offending key as sent.
func firstSent(m *wire.Message, a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	for _, f := range m.Fields {
		if f.Key == a || f.Key == b {
			return f.Key
		}
	}
	return a
}

// resultFields are a result's values, found in one pass over its fields.
type resultFields struct {
	status, retryable, errText string
	hasStatus, hasRetryable    bool
	hasState                   bool // any state.* key
	out                        lines
}

func (f *resultFields) scan(m *wire.Message) {
	for i := range m.Fields {
		fl := &m.Fields[i]
		switch fl.Key {
		case "status":
			f.status, f.hasStatus = fl.Value, true
		case "retryable":
			f.retryable, f.hasRetryable = fl.Value, true
		case "error":
			f.errText = fl.Value
		default:
			if strings.HasPrefix(fl.Key, wire.PrefixOut) {
				f.out.add(i, fl)
			} else if strings.HasPrefix(fl.Key, wire.PrefixState) {
				f.hasState = true
			}
		}
	}
}

// stateChanges validates a succeeded result's state.set.* and state.add.*.
// It resolves them, in arrival order, to the values to write, with what
// they add to the shared state's size. It returns the first offending key
// as sent, if any. That is a bad change, or the first change whose running
// total takes the size past stateLimit. The total follows the result's
// order. So a result that shrinks one key to make room for another lists
// it first.
func (c *Core) stateChanges(m *wire.Message) ([]kv, int64, string) {
	var sets []kv
	var growth int64
	limit := c.stateLimit()
	for _, f := range m.Fields {
		var add bool
		var name string
		switch {
		case strings.HasPrefix(f.Key, wire.PrefixStateSet):
			name = f.Key[len(wire.PrefixStateSet):]
		case strings.HasPrefix(f.Key, wire.PrefixStateAdd):
			name, add = f.Key[len(wire.PrefixStateAdd):], true
		default:
			continue
		}
		other := wire.PrefixStateAdd + name
		if add {
			other = wire.PrefixStateSet + name
		}
		if m.Has(other) {
			return nil, 0, f.Key // one key under both set and add
		}
		cur, had := c.state[name]
		value := f.Value
		if add {
			delta, ok := wire.ParseInt(f.Value)
			if !ok {
				return nil, 0, f.Key
			}
			n := int64(0)
			if had {
				if n, ok = wire.ParseInt(cur); !ok {
					return nil, 0, f.Key // target value is not an integer
				}
			}
			sum := n + delta
			if (delta > 0 && sum < n) || (delta < 0 && sum > n) {
				return nil, 0, f.Key // overflow
			}
			value = strconv.FormatInt(sum, 10)
		}
		// A name appears once in a result. A duplicate key is malformed, and
		// set with add is refused above. So cur is the value it replaces.
		growth += stateEntryBytes(name, value)
		if had {
			growth -= stateEntryBytes(name, cur)
		}
		if limit >= 0 && c.stateBytes+growth > limit {
			return nil, 0, f.Key // past the shared state's cap
		}
		if add {
			sets = append(sets, kv{strings.Clone(name), value})
		} else {
			sets = append(sets, kv{strings.Clone(name), strings.Clone(value)})
		}
	}
	return sets, growth, ""
}

// taskStateKeys is the keys of task_state besides out.*, error, the
// requeue keys and the field table's, every optional one counted. It is
// the reply that carries a task's outputs with the most other keys. error
// is there only with an error text. A task keeps the error that came with
// its outputs until both go, and a cancel keeps both. The keys of section
// 8.8 (progress, durations) are added only when they fit.
const taskStateKeys = 12

// taskStateKeysOf counts t's task_state keys besides out.* and error. It
// counts the fixed ones, the requeue keys once requeued, and each set field.
func taskStateKeysOf(t *task) int {
	keys := taskStateKeys + t.fields().replyKeys()
	if t.requeues() > 0 {
		keys += 2 // requeues, requeue_reason
	}
	return keys
}

// outTooLarge returns the first out.* key (or "error") with which the
// task_state reply, the larger of task_state and done, would exceed the max
// frame. A req counts as 128 bytes and every number as 20 digits.
func (c *Core) outTooLarge(t *task, m *wire.Message, errText string, out lines, stateLen int) string {
	keys := taskStateKeysOf(t)
	if errText != "" {
		keys++
	}
	if keys+out.n > wire.MaxKeys {
		// Too many keys for one payload (spec section 2), however short.
		// The first out key past the room left is the offending one.
		room := wire.MaxKeys - keys
		for i := range m.Fields {
			if f := &m.Fields[i]; strings.HasPrefix(f.Key, wire.PrefixOut) {
				if room--; room < 0 {
					return f.Key
				}
			}
		}
	}
	n := taskStateBase(t, stateLen)
	if errText != "" {
		n += len("\nerror=") + wire.EscapedLen(errText)
		if n > c.cfg.MaxFrame {
			return "error"
		}
	}
	if n+out.size <= c.cfg.MaxFrame {
		return ""
	}
	for i := range m.Fields { // too large: find the first key that makes it so
		f := &m.Fields[i]
		if !strings.HasPrefix(f.Key, wire.PrefixOut) {
			continue
		}
		if n += lineLen(f); n > c.cfg.MaxFrame {
			return f.Key
		}
	}
	return ""
}

// taskStateBase bounds the bytes of t's task_state reply, the larger of
// task_state and done. It leaves out its error and out.* lines and counts
// its set fields. A req counts as 128 bytes, every number as 20 digits
// and the state name as stateLen bytes.
func taskStateBase(t *task, stateLen int) int {
	return len("type=task_state") + len("\nreq=") + 128 +
		len("\ntask_id=") + 20 + len("\nversion=") + 20 + len("\nstate=") + stateLen +
		len("\nattempt=") + 20 + len("\nmax_attempts=") + 20 +
		len("\ntask_type=") + wire.EscapedLen(t.typ.name) +
		len("\nexecutor_id=") + len(t.execID) +
		len("\ncreated_ms=") + 20 + len("\nupdated_ms=") + 20 +
		len("\ntrace_id=") + traceLen(t.ownTrace()) + requeueLen(t) + t.fields().replyLen()
}

// requeueLen bounds the requeue keys of t's task_state. There are none
// before its first requeue.
func requeueLen(t *task) int {
	if t.requeues() == 0 {
		return 0
	}
	return len("\nrequeues=") + 20 + len("\nrequeue_reason=") + wire.EscapedLen(t.requeueReason())
}

// outputsStateLen is the longest state name a task shows while it holds a
// result's outputs, 9 bytes. It is failed when the result ends it (final),
// else succeeded, or retrying and then pending. A cancel that keeps them
// makes it cancelled. The next dispatch drops them.
func outputsStateLen(final bool) int {
	if final {
		return len("failed")
	}
	return len("cancelled")
}
