package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// maxStateName is the longest shared-state name. `state.set.` and the
// name make a key of at most 64 bytes (spec section 2).
const maxStateName = 64 - len(wire.PrefixStateSet)

// validStateName reports whether k can name a shared-state key.
func validStateName(k string) bool {
	return k != "" && len(k) <= maxStateName && wire.ValidKey(wire.PrefixStateSet+k)
}

// stateFix answers state_set and state_del (protocol section 8.6). They
// set or delete one key by hand, with an optional compare-and-set on the
// state version.
func (c *Core) stateFix(p *peer, m *wire.Message, req string, set bool) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	key, ok := m.Get("key")
	if !ok {
		c.badRequest(p, req, wire.MissingKey("key"))
		return
	}
	if !validStateName(key) {
		c.badRequest(p, req, &wire.ValueError{Key: "key", Reason: "must be 1 to " + strconv.Itoa(maxStateName) +
			" bytes of a-z 0-9 _ . -"})
		return
	}
	value, hasValue := m.Get("value")
	if set && !hasValue {
		c.badRequest(p, req, wire.MissingKey("value"))
		return
	}
	want, cas := m.Get("state_version")
	var expect uint64
	if cas {
		v, err := wire.UintValue("state_version", want)
		if err != nil {
			c.badRequest(p, req, err)
			return
		}
		expect = v
	}
	if !c.writable(p, req) {
		return
	}
	if cas && expect != c.stateVer {
		c.ops.StateConflicts++
		b := c.begin(wire.KindError, req)
		b.StrK(kCode, string(wire.CodeConflict))
		b.StrK(kMessage, "state_version is "+strconv.FormatUint(c.stateVer, 10)+", not "+strconv.FormatUint(expect, 10)+
			": read the state again and retry with its version")
		b.UintK(kStateVersion, c.stateVer)
		c.send(p.id, &b)
		return
	}
	old, had := c.state[key]
	if !set && !had {
		c.replyStateChanged(p, req, key, false)
		return
	}
	if set {
		growth := stateEntryBytes(key, value)
		if had {
			growth -= stateEntryBytes(key, old)
		}
		if limit := c.stateLimit(); limit >= 0 && growth > 0 && c.stateBytes+growth > limit {
			c.badRequest(p, req, &wire.ValueError{Key: "value", Reason: "the shared state would hold " +
				strconv.FormatInt(c.stateBytes+growth, 10) + " bytes, past --max-state-bytes " + strconv.FormatInt(limit, 10)})
			return
		}
	}
	r := c.newRecord(recStateFix)
	r.key, r.on, r.stateVer = strings.Clone(key), set, c.stateVer+1
	if set {
		r.args = strings.Clone(value)
	}
	if !c.commit(r) {
		return
	}
	args := append(c.askedBy(p), "key", key, "state_version", c.stateVer)
	if set {
		c.ops.StateSets++
		c.log.Info("shared state set by hand", append(args, "value_bytes", len(value))...)
	} else {
		c.ops.StateDels++
		c.log.Info("shared state key deleted by hand", args...)
	}
	c.replyStateChanged(p, req, key, true)
}

func (c *Core) replyStateChanged(p *peer, req, key string, changed bool) {
	b := c.begin(wire.KindStateChanged, req)
	b.Str("key", key)
	b.UintK(kStateVersion, c.stateVer)
	b.Bool("changed", changed)
	if changed {
		c.confirm(p.id, &b)
		return
	}
	c.send(p.id, &b)
}

// applyStateFix applies a state_set or state_del record. The size counts
// the change, though recovery recounts the whole state anyway.
func (c *Core) applyStateFix(r *record) {
	c.ownState()
	if old, had := c.state[r.key]; had {
		c.stateBytes -= stateEntryBytes(r.key, old)
	}
	if r.on {
		c.state[r.key] = r.args
		c.stateBytes += stateEntryBytes(r.key, r.args)
	} else {
		delete(c.state, r.key)
	}
	c.stateVer = r.stateVer
	c.stateMark = c.lastMark
}
