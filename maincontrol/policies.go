package maincontrol

import (
	"context"
	"sync/atomic"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// policyCounts are the reloads of the policy file, for /metrics.
type policyCounts struct {
	loads, failures atomic.Uint64
	failing         atomic.Bool
}

// loadPolicies reads Config.PolicyFile at start. A bad file stops the
// start, as a bad flag does. Policies are config, not state, so every
// start reads the file again.
func (s *Server) loadPolicies() error {
	if s.cfg.PolicyFile == "" {
		return nil
	}
	ps, err := LoadPolicyFile(s.cfg.PolicyFile)
	if err != nil {
		return err
	}
	s.mu.Lock()
	err = s.core.SetPolicies(ps)
	if err == nil {
		s.policies = &ps // a core rebuilt in cluster mode takes them again
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.metrics.policy.loads.Add(1)
	s.log.Info("policies loaded", "file", s.cfg.PolicyFile, "task_types", len(ps.Types), "defaults", ps.Default != core.Policy{})
	return nil
}

// watchReload reloads the policy file and the TLS files at each receive
// from Config.Reload until ctx ends.
func (s *Server) watchReload(ctx context.Context) {
	if s.cfg.Reload == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Reload:
			if s.tlsFiles != nil {
				_ = s.tlsFiles.Reload() // a failure is logged; the old files stay
			}
			if s.raftTLS != nil {
				_ = s.raftTLS.Reload()
			}
			if s.tlsFiles == nil && s.raftTLS == nil || s.cfg.PolicyFile != "" {
				s.ReloadPolicies()
			}
		}
	}
}

// ReloadPolicies reads the policy file again and applies it. A file that
// cannot be read or is not valid changes nothing. The policies in force
// stay, and the error is logged and counted.
func (s *Server) ReloadPolicies() error {
	if s.cfg.PolicyFile == "" {
		s.log.Warn("reload asked, but there is no --policy-file to reload")
		return nil
	}
	ps, err := LoadPolicyFile(s.cfg.PolicyFile)
	s.mu.Lock()
	if s.stopping {
		// Nothing is dispatched during a stop. The next start reads the file.
		s.mu.Unlock()
		return nil
	}
	if err == nil {
		err = s.core.SetPolicies(ps)
	}
	if err == nil {
		s.policies = &ps
	}
	wakes := s.wakes.take(nil)
	if err == nil {
		s.wantTick() // a rate or a stuck rule may bring a deadline
	}
	s.mu.Unlock()
	wake(wakes)
	if err != nil {
		s.metrics.policy.failures.Add(1)
		s.metrics.policy.failing.Store(true)
		s.log.Error("policy file not reloaded: keeping the policies in force", "file", s.cfg.PolicyFile, "err", err)
		return err
	}
	s.metrics.policy.loads.Add(1)
	s.metrics.policy.failing.Store(false)
	s.log.Info("policies reloaded", "file", s.cfg.PolicyFile, "task_types", len(ps.Types), "defaults", ps.Default != core.Policy{})
	return nil
}

// addPolicyMetrics exposes the policies in force, the types they hold
// back, the reloads and the stuck tasks.
func (m *serverMetrics) addPolicyMetrics(s *Server) {
	r := &m.reg
	r.CounterFunc("apollo11_policy_loads_total", "Times the policy file was read and applied, at start and on SIGHUP.",
		func() float64 { return float64(m.policy.loads.Load()) })
	r.CounterFunc("apollo11_policy_reload_failures_total", "Reloads of the policy file refused (unreadable or invalid); the policies in force stayed.",
		func() float64 { return float64(m.policy.failures.Load()) })
	r.GaugeFunc("apollo11_policy_reload_failing", "1 while the latest reload of the policy file was refused.", func() float64 {
		if m.policy.failing.Load() {
			return 1
		}
		return 0
	})
	perType := func(name, help string, value func(p core.Policy) float64) {
		r.GaugeVecFunc(name, help+` The defaults show as task_type="".`, "task_type", func() map[string]float64 {
			s.mu.Lock()
			infos := s.core.PolicyTypes()
			s.mu.Unlock()
			out := map[string]float64{}
			for _, in := range infos {
				if v := value(in.Policy); v != 0 {
					out[in.Type] = v
				}
			}
			return out
		})
	}
	perType("apollo11_policy_max_running", "Policy: the most dispatched and running tasks of the type.", func(p core.Policy) float64 { return float64(p.MaxRunning) })
	perType("apollo11_policy_rate_per_second", "Policy: the most dispatches of the type in any one second.", func(p core.Policy) float64 { return float64(p.RatePerSec) })
	perType("apollo11_policy_timeout_seconds", "Policy: the timeout of a task of the type that gives none.", func(p core.Policy) float64 { return p.Timeout.Seconds() })
	perType("apollo11_policy_max_attempts", "Policy: the max_attempts of a task of the type that gives none.", func(p core.Policy) float64 { return float64(p.MaxAttempts) })
	perType("apollo11_policy_stuck_after_seconds", "Policy: a running task of the type is stuck past this.", func(p core.Policy) float64 { return p.StuckAfter.Seconds() })
	perType("apollo11_policy_stuck_factor", "Policy: a running task of the type is stuck past this many times its recent p99 run time.", func(p core.Policy) float64 { return p.StuckFactor })
	r.GaugeVecFunc("apollo11_policy_held", "1 for each listed type whose pending tasks wait for its max_running or rate while an executor is free.", "task_type", func() map[string]float64 {
		s.mu.Lock()
		infos := s.core.PolicyTypes()
		s.mu.Unlock()
		out := map[string]float64{}
		for _, in := range infos {
			if in.Held != "" {
				out[in.Type] = 1
			}
		}
		return out
	})
	stuck := func() core.StuckStats {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.core.Stuck()
	}
	r.GaugeFunc("apollo11_tasks_stuck", "Running tasks past their type's stuck limit now.", func() float64 { return float64(stuck().Stuck) })
	r.CounterFunc("apollo11_tasks_stuck_total", "Running tasks found stuck (each dispatch counted once).", func() float64 { return float64(stuck().Flagged) })
	r.CounterFunc("apollo11_tasks_stuck_taken_back_total", "Stuck tasks taken back by their type's stuck_action.", func() float64 { return float64(stuck().TakenBack) })
}
