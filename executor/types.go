package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apollo11/apollo11/wire"
)

// ChangeTypes changes the task types this executor takes without
// reconnecting (the `types` message, protocol section 8.7). add gives the
// handlers of types to take. A type already taken gets the new handler.
// drop names types to take no more. Tasks of a dropped type that already
// run finish with their handler. It waits for the main control's
// `types_ok`. Between connections it returns nil at once, and the next
// register lists the new types. A type in both add and drop, a bad type
// name or a nil handler is an error wrapping ErrConfig, and changes
// nothing. If the main control refuses the change or ctx ends first, the
// executor keeps taking its old types, with their handlers. An added
// Describer's description goes with the change. A bad one is an error
// wrapping ErrConfig.
func (e *Executor) ChangeTypes(ctx context.Context, add map[string]Handler, drop ...string) error {
	for typ, h := range add {
		if !validTaskType(typ) {
			return configErr("task type %q: want non-empty UTF-8 without commas, spaces or control characters", typ)
		}
		if h == nil {
			return configErr("task type %q: nil handler", typ)
		}
	}
	for _, typ := range drop {
		if _, both := add[typ]; both {
			return configErr("task type %q: both added and dropped", typ)
		}
	}
	addDescs, err := describeAll(add)
	if err != nil {
		return err
	}
	e.mu.Lock()
	next := maps.Clone(e.cfg.Handlers)
	maps.Copy(next, add)
	for _, typ := range drop {
		delete(next, typ)
	}
	if len(next) > wire.MaxExecutorTypes {
		e.mu.Unlock()
		return configErr("%d task types: a main control takes at most %d from one executor", len(next), wire.MaxExecutorTypes)
	}
	// Added handlers serve at once. The main control may dispatch a task
	// of an added type before its types_ok. Dropped ones go after it, as
	// a task of theirs may still be on its way.
	before := maps.Clone(e.cfg.Handlers)
	oldTypes, oldDescs := e.types, e.descs
	kept := maps.Clone(next)
	for _, typ := range drop {
		if h, ok := e.cfg.Handlers[typ]; ok {
			kept[typ] = h
		}
	}
	e.cfg.Handlers = kept
	e.types = slices.Sorted(maps.Keys(next))
	descs := make(map[string]wire.Description, len(e.descs)+len(addDescs))
	for typ := range kept {
		if d, ok := addDescs[typ]; ok {
			descs[typ] = d
		} else if d, ok := e.descs[typ]; ok {
			if _, replaced := add[typ]; !replaced {
				descs[typ] = d
			}
		}
	}
	e.descs = descs
	s := e.cur
	e.mu.Unlock()
	e.log.Info("changing task types", "add", slices.Sorted(maps.Keys(add)), "drop", drop, "task_types", len(next))
	if s == nil {
		e.dropHandlers(add, drop)
		return nil
	}
	_, err = s.request(ctx, func(b *wire.Builder) {
		added := slices.Sorted(maps.Keys(add))
		if len(add) > 0 {
			b.List("add", added)
		}
		if len(drop) > 0 {
			b.List("drop", drop)
		}
		e.logLeftOut("types", appendDescriptions(b, addDescs, added, s.maxFrame, 0, 0))
	}, "types")
	switch {
	case err == nil, errors.Is(err, ErrDisconnected):
		// The next register lists the new types, so the change stands.
		e.dropHandlers(add, drop)
		return nil
	default:
		e.rollbackTypes(err, before, oldTypes, oldDescs, add)
		return fmt.Errorf("types: %w", err)
	}
}

// dropHandlers forgets the dropped types' handlers once the main control
// dispatches them no more. A type added again since keeps its handler.
func (e *Executor) dropHandlers(add map[string]Handler, drop []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, typ := range drop {
		if _, back := add[typ]; !back && !slices.Contains(e.types, typ) {
			delete(e.cfg.Handlers, typ)
		}
	}
}

// rollbackTypes restores the types taken before a failed change. A refused
// or unsent change keeps the old handlers only. After a timeout the main
// control may have applied it, so the added handlers stay too.
func (e *Executor) rollbackTypes(err error, before map[string]Handler, oldTypes []string,
	oldDescs map[string]wire.Description, add map[string]Handler) {
	var refused *wire.ErrorReply
	unapplied := errors.As(err, &refused) || errors.Is(err, ErrRequestTooLarge)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.types, e.descs = oldTypes, oldDescs
	for typ, h := range before {
		e.cfg.Handlers[typ] = h
	}
	if unapplied {
		for typ := range add {
			if h, ok := before[typ]; ok {
				e.cfg.Handlers[typ] = h
			} else {
				delete(e.cfg.Handlers, typ)
			}
		}
	}
	e.log.Warn("task types unchanged", "err", err, "task_types", len(oldTypes))
}

// TaskTypes returns the task types the executor takes now, sorted.
func (e *Executor) TaskTypes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.types)
}
