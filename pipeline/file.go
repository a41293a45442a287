package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

type stepOptions struct {
	MaxAttempts *int   `yaml:"max_attempts"`
	Timeout     string `yaml:"timeout"`
	Delay       string `yaml:"delay"`
	Priority    *int   `yaml:"priority"`
}

type step struct {
	ID          string            `yaml:"id"`
	Type        string            `yaml:"type"`
	Args        map[string]string `yaml:"args"`
	DependsOn   []string          `yaml:"depends_on"`
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
}

// Plan is a checked pipeline, steps in submission order: every step after
// the steps it depends on, otherwise in file order.
type Plan struct {
	Name    string
	Steps   []Step
	Longest []string // the longest chain of dependencies, first to last
}

// Parse reads and checks a pipeline file. vars override the file's vars.
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
	all := map[string]string{}
	for k, v := range f.Vars {
		all[k] = v
	}
	for k, v := range vars {
		all[k] = v
	}
	return plan(&f, all)
}

func plan(f *file, vars map[string]string) (*Plan, error) {
	if strings.TrimSpace(f.Name) == "" {
		return nil, fmt.Errorf("%w: name is required", ErrInvalid)
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
			return nil, fmt.Errorf("%w: step %d (%q): %v", ErrInvalid, i+1, f.Steps[i].ID, err)
		}
		if _, dup := index[s.ID]; dup {
			return nil, fmt.Errorf("%w: step id %q used twice", ErrInvalid, s.ID)
		}
		index[s.ID] = i
		steps[i] = s
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			if _, ok := index[d]; !ok {
				return nil, fmt.Errorf("%w: step %q depends on unknown step %q", ErrInvalid, s.ID, d)
			}
		}
	}
	if cyc := findCycle(steps, index); cyc != nil {
		return nil, &CycleError{Path: cyc}
	}
	order := topoOrder(steps, index)
	p := &Plan{Name: f.Name, Steps: order}
	p.Longest = longestChain(order)
	return p, nil
}

func buildStep(in *step, def *stepOptions, vars map[string]string, key string) (Step, error) {
	s := Step{ID: in.ID, Args: map[string]string{}}
	if !validStepID(s.ID) {
		return s, fmt.Errorf("id must be 1-64 characters of a-z A-Z 0-9 _ . -")
	}
	var err error
	if s.Type, err = expand(in.Type, vars); err != nil {
		return s, fmt.Errorf("type: %v", err)
	}
	if s.Type == "" || strings.ContainsAny(s.Type, ", \n") {
		return s, fmt.Errorf("type is required (no spaces or commas)")
	}
	for k, v := range in.Args {
		if !validArgName(k) {
			return s, fmt.Errorf("args: name %q must be 1-60 bytes of a-z 0-9 _ . -", k)
		}
		if s.Args[k], err = expand(v, vars); err != nil {
			return s, fmt.Errorf("args.%s: %v", k, err)
		}
	}
	seen := map[string]bool{}
	for _, d := range in.DependsOn {
		if d == in.ID {
			return s, fmt.Errorf("depends on itself")
		}
		if !seen[d] {
			seen[d] = true
			s.DependsOn = append(s.DependsOn, d)
		}
	}
	opts := *def
	if in.MaxAttempts != nil {
		opts.MaxAttempts = in.MaxAttempts
	}
	if in.Timeout != "" {
		opts.Timeout = in.Timeout
	}
	if in.Delay != "" {
		opts.Delay = in.Delay
	}
	if in.Priority != nil {
		opts.Priority = in.Priority
	}
	if opts.MaxAttempts != nil {
		if *opts.MaxAttempts < 1 {
			return s, fmt.Errorf("max_attempts must be at least 1")
		}
		s.MaxAttempts = *opts.MaxAttempts
	}
	if opts.Priority != nil {
		if *opts.Priority < 0 || *opts.Priority > 9 {
			return s, fmt.Errorf("priority must be 0 to 9")
		}
		s.Priority = *opts.Priority
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
	return s, nil
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

// validArgName: arg.<name> must be a wire key (a-z 0-9 _ . -, at most 64).
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
