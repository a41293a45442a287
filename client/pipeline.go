package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apollo11/apollo11/pipeline"
)

// PipelineRun records a submitted pipeline: the task of each step. It is
// what `apollo11 pipeline status` reads back (as JSON).
type PipelineRun struct {
	Name  string         `json:"name"`
	Steps []PipelineStep `json:"steps"`
}

// PipelineStep is one submitted step.
type PipelineStep struct {
	ID        string   `json:"id"`
	TaskID    uint64   `json:"task_id"`
	DependsOn []string `json:"depends_on,omitempty"`
}

// RunPipeline submits the plan's steps in order, each with depends_on the
// task ids of the steps it depends on (so dependencies always exist first
// and no cycle can reach the main control). When a submit is refused, the
// steps already submitted are cancelled and the error returned.
//
// With onDone set, every step is submitted with wait=true and RunPipeline
// returns only when all of them ended, calling onDone (from one goroutine
// at a time) as each ends.
func (c *Client) RunPipeline(ctx context.Context, plan *pipeline.Plan, onDone func(PipelineStep, Done)) (*PipelineRun, error) {
	run := &PipelineRun{Name: plan.Name}
	ids := map[string]uint64{}
	var watches []*Watch
	defer func() {
		for _, w := range watches {
			w.Close()
		}
	}()
	for _, s := range plan.Steps {
		req := SubmitRequest{Type: s.Type, Args: s.Args, Priority: s.Priority, MaxAttempts: s.MaxAttempts,
			Timeout: s.Timeout, Delay: s.Delay, Key: s.Key}
		for _, d := range s.DependsOn {
			req.DependsOn = append(req.DependsOn, ids[d])
		}
		var id uint64
		var err error
		if onDone != nil {
			var w *Watch
			if w, err = c.SubmitWatch(ctx, req); err == nil {
				watches = append(watches, w)
				id = w.Submitted.ID
			}
		} else {
			var sub Submitted
			sub, err = c.Submit(ctx, req)
			id = sub.ID
		}
		if err != nil {
			cerr := c.cancelRun(ctx, run)
			return run, errors.Join(fmt.Errorf("pipeline %s: step %s: %w", plan.Name, s.ID, err), cerr)
		}
		ids[s.ID] = id
		run.Steps = append(run.Steps, PipelineStep{ID: s.ID, TaskID: id, DependsOn: s.DependsOn})
	}
	if onDone == nil {
		return run, nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(watches))
	for i, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := w.Wait(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			onDone(run.Steps[i], d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return run, errors.Join(errs...)
}

// cancelRun cancels the steps of a run that failed to submit whole.
func (c *Client) cancelRun(ctx context.Context, run *PipelineRun) error {
	var errs []error
	for _, s := range run.Steps {
		if err := c.Cancel(ctx, s.TaskID); err != nil && !IsCode(err, "illegal_transition") {
			errs = append(errs, fmt.Errorf("cannot cancel step %s (task %d): %w", s.ID, s.TaskID, err))
		}
	}
	return errors.Join(errs...)
}

// PipelineStatus queries every step of a run.
func (c *Client) PipelineStatus(ctx context.Context, run *PipelineRun) ([]TaskState, error) {
	out := make([]TaskState, len(run.Steps))
	for i, s := range run.Steps {
		st, err := c.Query(ctx, s.TaskID)
		if err != nil {
			return out, fmt.Errorf("step %s (task %d): %w", s.ID, s.TaskID, err)
		}
		out[i] = st
	}
	return out, nil
}
