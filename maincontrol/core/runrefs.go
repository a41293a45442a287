package core

import (
	"errors"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Output references (protocol section 8.10): a step's args may hold
// ${steps.<id>.out.<k>}, filled in from that step's task's outputs when
// the step is released. $${ stands for a literal ${.

// walkRefs splits v into literal text and references, in order. ref
// returns false to stop the walk.
func walkRefs(v string, lit func(string), ref func(step, key string) bool) error {
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			lit(v)
			return nil
		}
		if i > 0 && v[i-1] == '$' {
			lit(v[:i-1])
			lit("${")
			v = v[i+2:]
			continue
		}
		rest := v[i+2:]
		if !strings.HasPrefix(rest, "steps.") {
			lit(v[:i+2])
			v = rest
			continue
		}
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return errors.New("output reference ${steps. without its closing }")
		}
		inner := rest[len("steps."):end]
		step, key, ok := strings.Cut(inner, ".out.")
		if !ok || !validStepID(step) || len(key) > 60 || !wire.ValidKey(wire.PrefixOut+key) {
			return errors.New("bad output reference ${steps." + clipText(inner) + "}: want ${steps.<step id>.out.<key>}")
		}
		lit(v[:i])
		if !ref(step, key) {
			return nil
		}
		v = rest[end+1:]
	}
}

// missingOutput describes a reference that found no output.
type missingOutput struct{ step, key string }

func (m *missingOutput) Error() string {
	return "missing output: step " + m.step + " has no out." + m.key
}

// fillArgs encodes args as a task's arg lines, references filled in by
// look. It returns the lines, their count, and the first reference look
// could not answer.
func fillArgs(args []kv, look func(step, key string) (string, bool)) (string, uint16, *missingOutput) {
	var buf []byte
	var val []byte
	var miss *missingOutput
	for i, a := range args {
		val = val[:0]
		_ = walkRefs(a.v, func(s string) { val = append(val, s...) }, func(step, key string) bool {
			v, ok := "", false
			if look != nil {
				v, ok = look(step, key)
			}
			if !ok {
				miss = &missingOutput{step, key}
				return false
			}
			val = append(val, v...)
			return true
		})
		if miss != nil {
			return "", 0, miss
		}
		if i > 0 {
			buf = append(buf, '\n')
		}
		buf = append(buf, a.k...)
		buf = append(buf, '=')
		buf = wire.AppendEscaped(buf, string(val))
	}
	return string(buf), uint16(len(args)), nil
}

// outputOf returns out.<key> of a task's latest result.
func outputOf(t *task, key string) (string, bool) {
	want := wire.PrefixOut + key + "="
	for line := range strings.SplitSeq(t.outs, "\n") {
		if v, ok := strings.CutPrefix(line, want); ok {
			return wire.Unescape(v), true
		}
	}
	return "", false
}

// lookIn answers references from run r's step tasks.
func (c *Core) lookIn(r *run) func(step, key string) (string, bool) {
	return func(step, key string) (string, bool) {
		j := r.stepIndex(step)
		if j < 0 {
			return "", false
		}
		t := c.tasks.get(r.first + uint64(j))
		if t == nil {
			return "", false
		}
		return outputOf(t, key)
	}
}

// argsFit reports whether a task frame with these arg lines (and extra
// keys besides the usual ones) fits max_frame and the key count.
func (c *Core) argsFit(typ, trace string, args string, argKeys int, extraKeys, extraBytes int) bool {
	if taskFrameKeys+extraKeys+argKeys > wire.MaxKeys {
		return false
	}
	l := lines{n: argKeys}
	if argKeys > 0 {
		l.size = len(args) + 1
	}
	return taskFrameMax(typ, traceLen(trace), l)+extraBytes <= c.cfg.MaxFrame
}

// rollbackKeyLen is what rollback_of adds to a compensation's task frame.
var rollbackKeyLen = len("\nrollback_of=") + 20

// errArgsTooLarge ends a step whose filled-in args no task frame holds.
const errArgsTooLarge = "args too large after output references"

// checkStepSize checks that step st's task frame, and its compensation's,
// fit: with its args as written (references count as written; filled-in
// args are checked at release). It adds the step to the spec's byte counts.
func (c *Core) checkStepSize(spec *RunSpec, st *stepSpec, pre string) error {
	s := &st.step
	args, n, _ := fillArgs(s.args, func(step, key string) (string, bool) { return "${steps." + step + ".out." + key + "}", true })
	if !c.argsFit(s.typ, spec.Trace, args, int(n), 0, 0) {
		return &wire.ValueError{Key: pre + "arg", Reason: "too large: the step's task frame could exceed max_frame " +
			strconv.Itoa(c.cfg.MaxFrame) + " or " + strconv.Itoa(wire.MaxKeys) + " keys"}
	}
	spec.tbytes += heldBytes(s.typ, args, "", spec.Trace, len(s.deps), "", "") + st.sub.fields.bytes()
	if s.comp {
		typ := s.compType
		if typ == "" {
			typ = s.typ
		}
		cargs, cn, _ := fillArgs(s.compArgs, func(step, key string) (string, bool) { return "${steps." + step + ".out." + key + "}", true })
		if !c.argsFit(typ, spec.Trace, cargs, int(cn), 1, rollbackKeyLen) {
			return &wire.ValueError{Key: pre + "compensate", Reason: "too large: the compensation's task frame could exceed max_frame " +
				strconv.Itoa(c.cfg.MaxFrame) + " or " + strconv.Itoa(wire.MaxKeys) + " keys"}
		}
	}
	return nil
}

// kvBytes is what args count as lines: key, '=', value, LF.
func kvBytes(args []kv) int64 {
	var n int64
	for _, a := range args {
		n += int64(len(a.k) + len(a.v) + 2)
	}
	return n
}
