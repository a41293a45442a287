package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/client"
)

// A resumed step waits again with its last end's error still in its
// task_state (protocol 8.3): the status says it is the last error, not
// why it waits now.
func TestPrintRunState_ErrorOfAnEarlierEnd(t *testing.T) {
	var out bytes.Buffer
	printRunState(&out, client.RunState{ID: 3, Name: "p", State: "running", Resumes: 1, Steps: []client.RunStepState{
		{ID: "a", TaskID: 13, State: "running", Error: "cancelled by request"},
		{ID: "b", TaskID: 14, State: "waiting", Error: "dependency 13 cancelled"},
		{ID: "c", TaskID: 15, State: "failed", Error: "boom"},
	}})
	assert.Equal(t, "run 3 p: running, resumed 1 time\n"+
		"a                    task 13       running  (last error: cancelled by request)\n"+
		"b                    task 14       waiting  (last error: dependency 13 cancelled)\n"+
		"c                    task 15       failed  (boom)\n", out.String())
}
