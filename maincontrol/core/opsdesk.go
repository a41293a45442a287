package core

import (
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// OpsCounts counts the operator's changes, for /metrics.
type OpsCounts struct {
	StateSets, StateDels, StateConflicts uint64
	Pauses, Resumes                      uint64
	TypeChanges                          uint64
}

// Ops returns the operator's changes counted so far.
func (c *Core) Ops() OpsCounts { return c.ops }

// logNotWritable is what a change refused while the log cannot be
// written is told.
const logNotWritable = "the log cannot be written; try again later"

// writable answers a request that would change state while the log
// cannot be written. It answers unavailable, and nothing changes.
func (c *Core) writable(p *peer, req string) bool {
	if !c.available {
		c.sendError(p, req, wire.CodeUnavailable, logNotWritable)
	}
	return c.available
}

// requiredText reads a required key that may not be empty.
func requiredText(m *wire.Message, k string) (string, error) {
	v, ok := m.Get(k)
	switch {
	case !ok:
		return "", wire.MissingKey(k)
	case v == "":
		return "", &wire.ValueError{Key: k, Reason: "must not be empty"}
	}
	return v, nil
}

// quoted quotes peer text for an error message, clipped.
func quoted(s string) string { return strconv.Quote(clipText(s)) }
