package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// compensate is a step's compensate: as written.
type compensate struct {
	Type string            `yaml:"type"`
	Args map[string]string `yaml:"args"`
}

// Compensate is the task that undoes a succeeded step when its run fails.
type Compensate struct {
	Type string // the step's own type when the file names none
	Args map[string]string
	// Refs are the output references in Args. They may read the step's
	// own outputs, and those of the steps it depends on.
	Refs []Ref

	tmpl map[string]string // Args as the main control's templates
}

// Ref is a reference ${steps.<Step>.out.<Out>} in an argument. The main
// control fills it in from the step's output when the reader is released.
type Ref struct {
	Arg  string // the argument that holds it
	Step string // the step whose output it reads
	Out  string // the output's key, without "out."
}

func (r Ref) String() string { return "${steps." + r.Step + ".out." + r.Out + "}" }

// refPrefix starts a template name that reads a step's output, not a
// variable. So no variable can be called steps.<anything>.
const refPrefix = "steps."

func isRef(name string) bool { return strings.HasPrefix(name, refPrefix) }

// parseRef reads steps.<id>.out.<key>. The first ".out." ends the id.
func parseRef(name string) (step, out string, err error) {
	step, out, ok := strings.Cut(strings.TrimPrefix(name, refPrefix), ".out.")
	if !ok || !validStepID(step) || !validArgName(out) {
		return "", "", fmt.Errorf("${%s} is not an output reference: write ${steps.<step id>.out.<key>}", name)
	}
	return step, out, nil
}

// expandArgs fills in the variables of args. Output references stay as
// written, for the main control to fill in. It returns the values, the
// references in argument-name order, and the values as templates.
func expandArgs(field string, in map[string]string, vars map[string]string) (map[string]string, []Ref, map[string]string, error) {
	args, tmpl := map[string]string{}, map[string]string{}
	var refs []Ref
	for _, k := range slices.Sorted(maps.Keys(in)) { // the same error every run
		if !validArgName(k) {
			return nil, nil, nil, fmt.Errorf("%s: name %q must be 1-60 bytes of a-z 0-9 _ . -", field, k)
		}
		v, t, r, err := expandArg(k, in[k], vars)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s.%s: %v", field, k, err)
		}
		args[k], tmpl[k] = v, t
		refs = append(refs, r...)
	}
	return args, refs, tmpl, nil
}

// expandArg is expand for one argument, keeping output references. It
// also returns the value as a template: the literal text escaped so that
// the main control reads only the references as references.
func expandArg(arg, s string, vars map[string]string) (value, tmpl string, refs []Ref, err error) {
	var v, t, lit strings.Builder // lit: the literal text since the last reference
	flush := func() {
		t.WriteString(escapeLiteral(lit.String()))
		lit.Reset()
	}
	err = scan(s, func(text string) { v.WriteString(text); lit.WriteString(text) }, func(name string) error {
		if !isRef(name) {
			x, err := expand("${"+name+"}", vars)
			v.WriteString(x)
			lit.WriteString(x)
			return err
		}
		step, out, err := parseRef(name)
		if err != nil {
			return err
		}
		if strings.HasSuffix(lit.String(), "$") {
			// $${ would read as a literal ${ to the main control.
			return fmt.Errorf("a $ right before ${%s} cannot be told from $${: put something between them", name)
		}
		refs = append(refs, Ref{Arg: arg, Step: step, Out: out})
		flush()
		v.WriteString("${" + name + "}")
		t.WriteString("${" + name + "}")
		return nil
	})
	if err != nil {
		return "", "", nil, err
	}
	flush()
	return v.String(), t.String(), refs, nil
}

// escapeLiteral writes literal text for the main control's argument
// templates, in which $${ is a literal ${ (protocol section 8.10).
func escapeLiteral(text string) string { return strings.ReplaceAll(text, "${", "$${") }

// buildSemantics reads a step's optional, when and compensate.
func buildSemantics(s *Step, in *step, vars map[string]string) error {
	optional, err := expand(in.Optional, vars)
	if err != nil {
		return fmt.Errorf("optional: %v", err)
	}
	switch optional {
	case "", "false":
	case "true":
		s.Optional = true
	default:
		return fmt.Errorf("optional must be true or false (got %q)", optional)
	}
	if s.When, err = expand(in.When, vars); err != nil {
		return fmt.Errorf("when: %v", err)
	}
	switch {
	case s.When != "" && s.When != "failed":
		return fmt.Errorf("when must be failed, or left out (got %q)", s.When)
	case s.When == "failed" && len(s.DependsOn) == 0:
		return fmt.Errorf("when: failed needs depends_on: the step runs only if one of its dependencies failed")
	}
	if in.Compensate == nil {
		return nil
	}
	c := &Compensate{}
	if c.Type, err = expand(in.Compensate.Type, vars); err != nil {
		return fmt.Errorf("compensate.type: %v", err)
	}
	if c.Type == "" {
		c.Type = s.Type // one handler may carry both directions
	}
	if strings.ContainsAny(c.Type, ", \n") {
		return fmt.Errorf("compensate.type %q has spaces or commas", c.Type)
	}
	if c.Args, c.Refs, c.tmpl, err = expandArgs("compensate.args", in.Compensate.Args, vars); err != nil {
		return err
	}
	s.Compensate = c
	return nil
}

// checkRefs checks every output reference against the graph. A step's
// args may read the steps it depends on, directly or through others. Its
// compensate may also read the step itself. steps are in file order.
func checkRefs(steps []Step, index map[string]int, lines []int) error {
	for i := range steps {
		s := &steps[i]
		refs := s.Refs
		if s.Compensate != nil {
			refs = append(slices.Clip(refs), s.Compensate.Refs...)
		}
		if len(refs) == 0 {
			continue
		}
		ancestors := ancestorsOf(steps, index, i)
		for j, r := range refs {
			field := "args." + r.Arg
			own := j >= len(s.Refs) // a compensate's reference
			if own {
				field = "compensate.args." + r.Arg
			}
			bad := ""
			switch _, known := index[r.Step]; {
			case !known:
				bad = fmt.Sprintf("names unknown step %q", r.Step)
			case r.Step == s.ID && !own:
				bad = "reads the step's own output: only its compensate can"
			case r.Step != s.ID && !ancestors[r.Step]:
				bad = fmt.Sprintf("reads step %q, which %q does not depend on (directly or through other steps): add it to depends_on",
					r.Step, s.ID)
			}
			if bad != "" {
				return fmt.Errorf("%w: %s %q: %s: %s %s", ErrInvalid, where(i, lines), s.ID, field, r, bad)
			}
		}
	}
	return nil
}

// ancestorsOf returns the steps that step i depends on, transitively. The
// graph has no cycle when this runs.
func ancestorsOf(steps []Step, index map[string]int, i int) map[string]bool {
	seen := map[string]bool{}
	stack := slices.Clone(steps[i].DependsOn)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		stack = append(stack, steps[index[d]].DependsOn...)
	}
	return seen
}

// RunOnly names what the plan uses that only a main control with runs
// can do, or returns nil. Without runs, steps are submitted one by one,
// and nothing fills in outputs, skips or compensates.
func (p *Plan) RunOnly() []string {
	var uses []string
	add := func(what string) {
		if !slices.Contains(uses, what) {
			uses = append(uses, what)
		}
	}
	for _, s := range p.Steps {
		if s.Optional {
			add("optional steps")
		}
		if s.When != "" {
			add("when: failed")
		}
		if s.Compensate != nil {
			add("compensate")
		}
		if len(s.Refs) > 0 || s.Compensate != nil && len(s.Compensate.Refs) > 0 {
			add("step outputs (${steps.<id>.out.<key>})")
		}
	}
	return uses
}
