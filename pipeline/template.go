package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// expand replaces ${name} with vars[name] and $$ with $. An undefined
// variable or an unclosed ${ is an error.
func expand(s string, vars map[string]string) (string, error) {
	return substitute(s, func(name string) (string, error) {
		if isRef(name) {
			return "", fmt.Errorf("${%s}: a step's outputs may be read only in args", name)
		}
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("undefined variable ${%s} (give it with --var %s=...)", name, name)
		}
		return v, nil
	})
}

// substitute replaces each ${name} in s with what value returns for it,
// and $$ with $. It is the one reading of templates, for expand and
// references.
func substitute(s string, value func(name string) (string, error)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	err := scan(s, func(text string) { b.WriteString(text) }, func(name string) error {
		v, err := value(name)
		b.WriteString(v)
		return err
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// scan splits a template into literal text ($$ already made $) and the
// names of its ${name}s, in order.
func scan(s string, text func(string), name func(string) error) error {
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			text(s[i:])
			return nil
		}
		text(s[i : i+j])
		i += j
		switch {
		case i+1 < len(s) && s[i+1] == '$':
			text("$")
			i++
		case i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return fmt.Errorf("unclosed ${ in %q", s)
			}
			if err := name(s[i+2 : i+2+end]); err != nil {
				return err
			}
			i += 2 + end
		default:
			text("$")
		}
	}
	return nil
}

// references returns the variables the file's templates refer to. It
// reads every value plan expands. A field added there must be added here.
// Otherwise a --var used only in it would be refused as unknown.
func (f *file) references() map[string]bool {
	refs := map[string]bool{}
	add := func(values ...string) {
		for _, s := range values {
			// An unclosed ${ is reported by plan, with where it is.
			_, _ = substitute(s, func(name string) (string, error) {
				if !isRef(name) { // a step's output, not a variable
					refs[name] = true
				}
				return "", nil
			})
		}
	}
	options := func(o *stepOptions) { add(o.MaxAttempts, o.Timeout, o.Delay, o.Priority) }
	add(f.Name, f.Key)
	options(&f.Defaults)
	for i := range f.Steps {
		s := &f.Steps[i]
		add(s.ID, s.Type)
		add(slices.Collect(maps.Values(s.Args))...)
		add(s.DependsOn...)
		add(s.Optional, s.When)
		if c := s.Compensate; c != nil {
			add(c.Type)
			add(slices.Collect(maps.Values(c.Args))...)
		}
		options(&s.stepOptions)
	}
	return refs
}

// UnknownVarError reports --var names that the file neither declares in
// vars nor uses in a ${name}. Otherwise a misspelt name (data for date)
// would be taken in silence, and the file run with its default.
type UnknownVarError struct {
	Names []string // the unknown names, sorted
	Known []string // the variables the file declares or uses, sorted
}

func (e *UnknownVarError) Error() string {
	known := "it has none"
	if len(e.Known) > 0 {
		known = "its variables: " + strings.Join(e.Known, ", ")
	}
	if len(e.Names) == 1 {
		return fmt.Sprintf("unknown --var %s: the file neither declares it in vars nor uses ${%s} (%s)", e.Names[0], e.Names[0], known)
	}
	return fmt.Sprintf("unknown --var %s: the file neither declares them in vars nor uses them (%s)", strings.Join(e.Names, ", "), known)
}

// checkVars refuses vars the file does not know (see UnknownVarError).
func checkVars(f *file, vars map[string]string) error {
	known := f.references()
	for k := range f.Vars {
		known[k] = true
	}
	var unknown []string
	for k := range vars {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return &UnknownVarError{Names: unknown, Known: slices.Sorted(maps.Keys(known))}
}
