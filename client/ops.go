package client

import (
	"context"
	"fmt"

	"github.com/apollo11/apollo11/wire"
)

// StateChange is the `state_changed` reply of the shared-state repairs.
type StateChange struct {
	Key          string `json:"key"`
	StateVersion uint64 `json:"state_version"` // after the request
	Changed      bool   `json:"changed"`       // false: state_del of a key not set
}

// StateConflict is the error of a compare-and-set whose version was not
// the current one (`code=conflict`). It matches IsCode(err, conflict).
type StateConflict struct {
	Current uint64 // the shared state's version when the request came
	Err     *Error
}

func (e *StateConflict) Error() string { return e.Err.Error() }
func (e *StateConflict) Unwrap() error { return e.Err }

// StateSet sets one shared-state key (`state_set`), whatever the state's
// version. It needs the admin group (protocol section 8.6).
func (c *Client) StateSet(ctx context.Context, key, value string) (StateChange, error) {
	return c.stateFix(ctx, wire.KindStateSet, key, &value, nil)
}

// StateSetIf is StateSet only while the shared state's version is
// version. Otherwise it returns a *StateConflict.
func (c *Client) StateSetIf(ctx context.Context, key, value string, version uint64) (StateChange, error) {
	return c.stateFix(ctx, wire.KindStateSet, key, &value, &version)
}

// StateDel deletes one shared-state key (`state_del`). Changed is false
// when it was not set.
func (c *Client) StateDel(ctx context.Context, key string) (StateChange, error) {
	return c.stateFix(ctx, wire.KindStateDel, key, nil, nil)
}

// StateDelIf is StateDel only while the shared state's version is
// version; otherwise it returns a *StateConflict.
func (c *Client) StateDelIf(ctx context.Context, key string, version uint64) (StateChange, error) {
	return c.stateFix(ctx, wire.KindStateDel, key, nil, &version)
}

func (c *Client) stateFix(ctx context.Context, typ wire.Kind, key string, value *string, version *uint64) (StateChange, error) {
	if !wire.ValidKey(wire.PrefixStateSet + key) {
		return StateChange{}, fmt.Errorf("%s: bad state key %q: 1 to 54 bytes of a-z 0-9 _ . -", typ, key)
	}
	fill := func(b *wire.Builder) {
		b.Str("key", key)
		if value != nil {
			b.Str("value", *value)
		}
		if version != nil {
			b.Uint("state_version", *version)
		}
	}
	if err := ctx.Err(); err != nil {
		return StateChange{}, fmt.Errorf("%s: %w", typ, err) // nothing sent
	}
	cl, req, err := c.start(ctx, typ, fill, oneShot, false) // sent twice, a set would count twice
	if err != nil {
		return StateChange{}, fmt.Errorf("%s: %w", typ, err)
	}
	m, err := c.await(ctx, cl, req)
	if err != nil {
		return StateChange{}, fmt.Errorf("%s: %w", typ, err)
	}
	if m.Kind() == wire.KindError && m.Value("code") == string(wire.CodeConflict) {
		// The error frame names the current version (protocol 8.6).
		current, _ := m.Uint("state_version")
		return StateChange{}, fmt.Errorf("%s: %w", typ, &StateConflict{Current: current, Err: wire.ErrorReplyOf(m)})
	}
	if m, err = expect(m, typ, wire.KindStateChanged); err != nil {
		return StateChange{}, err
	}
	ver, err := m.Uint("state_version")
	if err != nil {
		return StateChange{}, fmt.Errorf("%s: bad reply: %w", typ, err)
	}
	return StateChange{Key: m.Value("key"), StateVersion: ver, Changed: m.Value("changed") == "true"}, nil
}

// Pause stops dispatching tasks of taskType (`pause`); submits are still
// accepted and running tasks finish. changed is false when it was paused
// already.
func (c *Client) Pause(ctx context.Context, taskType string) (changed bool, err error) {
	return c.pause(ctx, wire.KindPause, wire.KindPaused, taskType)
}

// Resume dispatches tasks of taskType again (`resume`). changed is false
// when it was not paused.
func (c *Client) Resume(ctx context.Context, taskType string) (changed bool, err error) {
	return c.pause(ctx, wire.KindResume, wire.KindResumed, taskType)
}

func (c *Client) pause(ctx context.Context, typ, reply wire.Kind, taskType string) (bool, error) {
	if taskType == "" {
		return false, fmt.Errorf("%s: empty task type", typ)
	}
	m, err := c.roundTrip(ctx, typ, reply, idempotent, func(b *wire.Builder) { b.Str("task_type", taskType) })
	if err != nil {
		return false, err
	}
	return m.Value("changed") == "true", nil
}
