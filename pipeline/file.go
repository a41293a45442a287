package pipeline

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrInvalid wraps every problem found in a pipeline file.
var ErrInvalid = errors.New("invalid pipeline")

// file is the YAML as written.
type file struct {
	Name     string            `yaml:"name"`
	Vars     map[string]string `yaml:"vars"`
	Key      string            `yaml:"key"`
	Defaults stepOptions       `yaml:"defaults"`
	Steps    []step            `yaml:"steps"`
}

// stepOptions are read as strings, "" when not given. So a ${var} may
// stand for any of them. They are checked once expanded.
type stepOptions struct {
	MaxAttempts string `yaml:"max_attempts"`
	Timeout     string `yaml:"timeout"`
	Delay       string `yaml:"delay"`
	Priority    string `yaml:"priority"`
}

type step struct {
	ID          string            `yaml:"id"`
	Type        string            `yaml:"type"`
	Args        map[string]string `yaml:"args"`
	DependsOn   []string          `yaml:"depends_on"`
	Optional    string            `yaml:"optional"`
	When        string            `yaml:"when"`
	Compensate  *compensate       `yaml:"compensate"`
	stepOptions `yaml:",inline"`
}

// Step is one planned step, templates filled in.
type Step struct {
	ID          string
	Type        string
	Args        map[string]string
	DependsOn   []string // step ids
	MaxAttempts int      // 0: the main control's default
	Timeout     time.Duration
	Delay       time.Duration
	Priority    int
	Key         string // idempotency key, "" for none
	// Optional: the step's failure does not cancel its dependents.
	Optional bool
	// When is "" (run when the dependencies succeed) or "failed" (run
	// only if one of them failed; otherwise end as skipped).
	When string
	// Compensate undoes the step when the run fails after it succeeded.
	Compensate *Compensate
	// Refs are the output references in Args, by argument name.
	Refs []Ref

	tmpl map[string]string // Args as the main control's templates
}

// Plan is a checked pipeline with its steps in submission order. Every
// step comes after the steps it depends on. Otherwise file order holds.
type Plan struct {
	Name string
	// Key is the file's key, filled in: the run's key with runs, else
	// the prefix of each step's key.
	Key     string
	Steps   []Step
	Longest []string // the longest chain of dependencies, first to last
}

// Parse reads and checks a pipeline file. vars override the file's vars.
// A name in vars that the file neither declares nor uses is an
// *UnknownVarError.
func Parse(r io.Reader, vars map[string]string) (*Plan, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("cannot read pipeline: %w", err)
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty file", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	lines, err := checkShape(dec, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	all := map[string]string{}
	for k, v := range f.Vars {
		all[k] = v
	}
	for k, v := range vars {
		all[k] = v
	}
	p, err := plan(&f, all, lines)
	if err != nil {
		// This comes first. A template the scan of references could not
		// read (an unclosed ${) would otherwise show as an unknown --var.
		return nil, err
	}
	if err := checkVars(&f, vars); err != nil {
		return nil, err
	}
	return p, nil
}

// checkShape refuses what the typed decoding lets pass in silence. One is
// a second YAML document after the first. Another is an empty item in
// steps, which the decoder drops. It returns the line each step starts on,
// for the errors found later.
func checkShape(dec *yaml.Decoder, data []byte) ([]int, error) {
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more than one YAML document: a pipeline file holds one")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, err
	}
	top := doc.Content[0]
	var lines []int
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "steps" {
			continue
		}
		for _, item := range top.Content[i+1].Content {
			if item.Kind == yaml.ScalarNode && item.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: empty step", item.Line)
			}
			lines = append(lines, item.Line)
		}
	}
	return lines, nil
}

// where names step i for an error. It gives the step's number, and the
// line it starts on when known.
func where(i int, lines []int) string {
	if i < len(lines) {
		return fmt.Sprintf("step %d (line %d)", i+1, lines[i])
	}
	return fmt.Sprintf("step %d", i+1)
}

func plan(f *file, vars map[string]string, lines []int) (*Plan, error) {
	name, err := expand(f.Name, vars)
	if err != nil {
		return nil, fmt.Errorf("%w: name: %v", ErrInvalid, err)
	}
	if strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("%w: name is required", ErrInvalid)
	}
	if !validStepID(name) {
		// It names the run file (<name>.run.json), so no paths.
		return nil, fmt.Errorf("%w: name %q must be 1-64 characters of a-z A-Z 0-9 _ . -", ErrInvalid, name)
	}
	if len(f.Steps) == 0 {
		return nil, fmt.Errorf("%w: no steps", ErrInvalid)
	}
	key, err := expand(f.Key, vars)
	if err != nil {
		return nil, fmt.Errorf("%w: key: %v", ErrInvalid, err)
	}
	steps := make([]Step, len(f.Steps))
	index := map[string]int{}
	for i := range f.Steps {
		s, err := buildStep(&f.Steps[i], &f.Defaults, vars, key)
		if err != nil {
			// The id as filled in once it is, and as written before.
			return nil, fmt.Errorf("%w: %s %q: %v", ErrInvalid, where(i, lines), cmp.Or(s.ID, f.Steps[i].ID), err)
		}
		if first, dup := index[s.ID]; dup {
			return nil, fmt.Errorf("%w: %s: step id %q used twice (first by %s)", ErrInvalid, where(i, lines), s.ID, where(first, lines))
		}
		index[s.ID] = i
		steps[i] = s
	}
	for i, s := range steps {
		for _, d := range s.DependsOn {
			if _, ok := index[d]; !ok {
				return nil, fmt.Errorf("%w: %s: step %q depends on unknown step %q", ErrInvalid, where(i, lines), s.ID, d)
			}
		}
	}
	if cyc := findCycle(steps, index); cyc != nil {
		return nil, &CycleError{Path: cyc}
	}
	if err := checkRefs(steps, index, lines); err != nil {
		return nil, err
	}
	order := topoOrder(steps, index)
	p := &Plan{Name: name, Key: key, Steps: order}
	p.Longest = longestChain(order)
	return p, nil
}

func buildStep(in *step, def *stepOptions, vars map[string]string, key string) (Step, error) {
	s := Step{Args: map[string]string{}}
	var err error
	if s.ID, err = expand(in.ID, vars); err != nil {
		return s, fmt.Errorf("id: %v", err)
	}
	if !validStepID(s.ID) {
		return s, fmt.Errorf("id must be 1-64 characters of a-z A-Z 0-9 _ . -")
	}
	if s.Type, err = expand(in.Type, vars); err != nil {
		return s, fmt.Errorf("type: %v", err)
	}
	if s.Type == "" || strings.ContainsAny(s.Type, ", \n") {
		return s, fmt.Errorf("type is required (no spaces or commas)")
	}
	if s.Args, s.Refs, s.tmpl, err = expandArgs("args", in.Args, vars); err != nil {
		return s, err
	}
	seen := map[string]bool{}
	for _, d := range in.DependsOn {
		if d, err = expand(d, vars); err != nil {
			return s, fmt.Errorf("depends_on: %v", err)
		}
		if d == s.ID {
			return s, fmt.Errorf("depends on itself (dependency cycle: %s -> %s)", d, d)
		}
		if !seen[d] {
			seen[d] = true
			s.DependsOn = append(s.DependsOn, d)
		}
	}
	opts := *def
	for _, o := range []struct {
		name, step string
		to         *string
	}{
		{"max_attempts", in.MaxAttempts, &opts.MaxAttempts}, {"timeout", in.Timeout, &opts.Timeout},
		{"delay", in.Delay, &opts.Delay}, {"priority", in.Priority, &opts.Priority},
	} {
		if o.step != "" {
			*o.to = o.step
		}
		if *o.to, err = expand(*o.to, vars); err != nil {
			return s, fmt.Errorf("%s: %v", o.name, err)
		}
	}
	if opts.MaxAttempts != "" {
		if s.MaxAttempts, err = strconv.Atoi(opts.MaxAttempts); err != nil || s.MaxAttempts < 1 {
			return s, fmt.Errorf("max_attempts must be at least 1 (got %q)", opts.MaxAttempts)
		}
	}
	if opts.Priority != "" {
		if s.Priority, err = strconv.Atoi(opts.Priority); err != nil || s.Priority < 0 || s.Priority > 9 {
			return s, fmt.Errorf("priority must be 0 to 9 (got %q)", opts.Priority)
		}
	}
	if s.Timeout, err = duration(opts.Timeout); err != nil {
		return s, fmt.Errorf("timeout: %v", err)
	}
	if s.Delay, err = duration(opts.Delay); err != nil {
		return s, fmt.Errorf("delay: %v", err)
	}
	if key != "" {
		s.Key = key + "/" + s.ID
	}
	return s, buildSemantics(&s, in, vars)
}

func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration like 90s or 10m", s)
	}
	return d, nil
}

func validStepID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// validArgName reports whether arg.<k> is a wire key. A wire key is
// a-z 0-9 _ . - and at most 64 bytes, the arg. prefix included.
func validArgName(k string) bool {
	if k == "" || len(k) > 60 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
