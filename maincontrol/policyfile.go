package maincontrol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// maxPolicyFileBytes bounds what a policy file may hold, as it is read whole.
const maxPolicyFileBytes = 4 << 20

// policyFile is a policy file as written (see docs/protocol.md 8.9).
type policyFile struct {
	Defaults policyEntry            `yaml:"defaults"`
	Types    map[string]policyEntry `yaml:"types"`
}

// policyEntry holds one type's settings. nil is not given.
type policyEntry struct {
	Timeout     *string  `yaml:"timeout"`
	MaxAttempts *uint64  `yaml:"max_attempts"`
	Priority    *int     `yaml:"priority"`
	Retry       *string  `yaml:"retry"`
	RetryBase   *string  `yaml:"retry_base"`
	RetryCap    *string  `yaml:"retry_cap"`
	MaxRunning  *int     `yaml:"max_running"`
	Rate        *int     `yaml:"rate"`
	StuckAfter  *string  `yaml:"stuck_after"`
	StuckFactor *float64 `yaml:"stuck_factor"`
	StuckAction *string  `yaml:"stuck_action"`
}

// LoadPolicyFile reads and checks a policy file.
func LoadPolicyFile(path string) (core.Policies, error) {
	f, err := os.Open(path)
	if err != nil {
		return core.Policies{}, fmt.Errorf("policy file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyFileBytes+1))
	if err != nil {
		return core.Policies{}, fmt.Errorf("policy file %s: %w", path, err)
	}
	if len(data) > maxPolicyFileBytes {
		return core.Policies{}, fmt.Errorf("policy file %s: larger than %d bytes", path, maxPolicyFileBytes)
	}
	ps, err := ParsePolicies(data)
	if err != nil {
		return core.Policies{}, fmt.Errorf("policy file %s: %w", path, err)
	}
	return ps, nil
}

// ParsePolicies reads a policy file's YAML. Unknown keys, a second
// document and values the core would refuse are errors. An empty file
// holds no policies.
func ParsePolicies(data []byte) (core.Policies, error) {
	var pf policyFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil {
		if errors.Is(err, io.EOF) {
			return core.Policies{}, nil
		}
		return core.Policies{}, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return core.Policies{}, errors.New("more than one YAML document: a policy file holds one")
	}
	ps := core.Policies{Types: make(map[string]core.Policy, len(pf.Types))}
	var err error
	if ps.Default, err = pf.Defaults.policy(); err != nil {
		return core.Policies{}, fmt.Errorf("defaults: %w", err)
	}
	for name, e := range pf.Types {
		if ps.Types[name], err = e.policy(); err != nil {
			return core.Policies{}, fmt.Errorf("task type %q: %w", name, err)
		}
	}
	return ps, ps.Check()
}

// policy converts an entry. The core checks the ranges.
func (e *policyEntry) policy() (core.Policy, error) {
	var p core.Policy
	dur := func(name string, s *string, d *time.Duration) error {
		if s == nil {
			return nil
		}
		v, err := time.ParseDuration(*s)
		if err != nil {
			return fmt.Errorf("%s %q: want a duration such as 30s or 5m", name, *s)
		}
		if v <= 0 {
			return fmt.Errorf("%s %q: want more than 0", name, *s)
		}
		*d = v
		return nil
	}
	for _, err := range []error{dur("timeout", e.Timeout, &p.Timeout), dur("retry_base", e.RetryBase, &p.RetryBase),
		dur("retry_cap", e.RetryCap, &p.RetryCap), dur("stuck_after", e.StuckAfter, &p.StuckAfter)} {
		if err != nil {
			return p, err
		}
	}
	positive := func(name string, v *int) (int, error) {
		if v == nil {
			return 0, nil
		}
		if *v < 1 {
			return 0, fmt.Errorf("%s %d: want 1 or more", name, *v)
		}
		return *v, nil
	}
	var err error
	if p.MaxRunning, err = positive("max_running", e.MaxRunning); err != nil {
		return p, err
	}
	if p.RatePerSec, err = positive("rate", e.Rate); err != nil {
		return p, err
	}
	if e.MaxAttempts != nil {
		if *e.MaxAttempts < 1 {
			return p, errors.New("max_attempts 0: want 1 or more")
		}
		p.MaxAttempts = *e.MaxAttempts
	}
	if e.Priority != nil {
		if *e.Priority < 0 || *e.Priority > 9 {
			return p, fmt.Errorf("priority %d: want 0 to 9", *e.Priority)
		}
		p.Priority, p.HasPriority = uint8(*e.Priority), true
	}
	if e.Retry != nil {
		if p.Retry, err = core.ParseRetryKind(*e.Retry); err != nil || *e.Retry == "" {
			return p, fmt.Errorf("retry %q: want none, fixed or exponential", *e.Retry)
		}
		if p.Retry == core.RetryNone && (p.RetryBase > 0 || p.RetryCap > 0) {
			return p, errors.New("retry none takes no retry_base or retry_cap")
		}
	}
	if e.StuckFactor != nil {
		if !(*e.StuckFactor >= 1) {
			return p, fmt.Errorf("stuck_factor %v: want 1 or more", *e.StuckFactor)
		}
		p.StuckFactor = *e.StuckFactor
	}
	if e.StuckAction != nil {
		if p.StuckAction, err = core.ParseStuckAction(*e.StuckAction); err != nil {
			return p, err
		}
	}
	return p, nil
}
