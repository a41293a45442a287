package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// A refused resume says what to do, in the CLI's terms: "(from=a)" is a
// wire field, and a rolled-back or succeeded run only runs again under a
// new key.
func TestExplainResume(t *testing.T) {
	refused := func(msg string) error {
		return fmt.Errorf("run_resume: %w", &wire.ErrorReply{Code: wire.CodeIllegalTransition, Message: msg})
	}
	tests := []struct {
		name, msg, want string
	}{
		{"rolled back", "run 2 was rolled back: its work was undone",
			"resume run 2: run 2 was rolled back: its work was undone; a rolled-back run is not resumed: " +
				"run the pipeline again under a new key (pipeline run FILE with a new --var in its key)"},
		{"partly rolled back", "run 2 was (partly) rolled back: its work was undone",
			"resume run 2: run 2 was (partly) rolled back: its work was undone; a rolled-back run is not resumed: " +
				"run the pipeline again under a new key (pipeline run FILE with a new --var in its key)"},
		{"succeeded", "run 2 has succeeded; only a failed or cancelled run is resumed",
			"resume run 2: run 2 has succeeded; only a failed or cancelled run is resumed (--from too): " +
				"to run its steps again, run the pipeline under a new key (pipeline run FILE with a new --var in its key)"},
		{"running", "run 2 is running; only a failed or cancelled run is resumed",
			"resume run 2: run 2 is running; only a failed or cancelled run is resumed: " +
				"wait for its end (apollo11 pipeline status 2), then resume it if it failed"},
		{"missing output", "missing output: step a has no out.nope: resume from the step that makes it (from=a)",
			"resume run 2: missing output: step a has no out.nope: resume from the step that makes it (--from a) " +
				"if it may make it this time; if the file names an output the step never makes, " +
				"only a new run fixes it: correct the file, run it under a new key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := explainResume(2, refused(tc.msg))
			assert.EqualError(t, err, tc.want)
			assert.NotContains(t, err.Error(), "from=")
			_, ok := errors.AsType[*wire.ErrorReply](err)
			assert.True(t, ok, "the main control's reply stays in the chain")
		})
	}
	assert.EqualError(t, explainResume(2, fmt.Errorf("run_resume: %w", &wire.ErrorReply{Code: wire.CodeUnknownRun, Message: "no run 2"})),
		"resume run 2: run_resume: main control error unknown_run: no run 2")
}

// A run that failed on a missing output is not told to resume plainly:
// that resume is refused. It is told to resume from the output's step.
func TestResumeHint(t *testing.T) {
	failed := client.RunState{ID: 5, State: client.RunFailed, Steps: []client.RunStepState{
		{ID: "a", State: "succeeded"},
		{ID: "b", State: "failed", Error: "missing output: step a has no out.nope"},
	}}
	assert.Equal(t, "resume with: apollo11 pipeline resume 5 --from a, if step a may make out.nope this time; "+
		"if it never does, correct the file and run it under a new key", resumeHint(failed))
	failed.Steps[1].Error = "exit status 1"
	assert.Equal(t, "resume with: apollo11 pipeline resume 5", resumeHint(failed))
}

// A run that succeeded with steps that did not says why in a sentence,
// not a bare "did not".
func TestRunSummary_SucceededWithOptionalSteps(t *testing.T) {
	var b strings.Builder
	printRunSummary(&b, &runRunReport{Name: "p", RunID: 3, State: client.RunSucceeded, Failed: 1}, 5)
	assert.Equal(t, "pipeline p: run 3 succeeded; 1 of 5 steps did not succeed, being optional or skipped\n", b.String())
}
