package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/wire"
)

// The schedule methods against an in-process main control: add (and add
// again), get, list in pages, pause, resume, delete, and the client's own
// refusals of a body with a key.
func TestClient_Schedules(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	defer c.Close()
	assert.Contains(t, c.Features(), wire.FeatureSchedules)

	req := client.ScheduleRequest{Name: "nightly", Cron: "0 2 * * *", Zone: "UTC", Jitter: 90 * time.Second, CatchUp: true,
		Task: client.SubmitRequest{Type: "report", Args: map[string]string{"day": "yesterday"}, Priority: 3, Label: "nightly"}}
	added, err := c.ScheduleAdd(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "nightly", added.Name)
	assert.False(t, added.Duplicate)
	assert.Equal(t, 2, added.NextFire.Hour())
	assert.True(t, added.NextFire.After(time.Now()))
	again, err := c.ScheduleAdd(ctx, req)
	require.NoError(t, err)
	assert.True(t, again.Duplicate)

	s, err := c.ScheduleGet(ctx, "nightly")
	require.NoError(t, err)
	assert.Equal(t, client.Schedule{Name: "nightly", Cron: "0 2 * * *", Zone: "UTC", Jitter: 90 * time.Second,
		Missed: "catch_up", NextFire: added.NextFire, TaskType: "report"}, s)

	for i := range 5 {
		_, err := c.ScheduleAdd(ctx, client.ScheduleRequest{Name: fmt.Sprintf("s%d", i), Cron: "@hourly", Task: client.SubmitRequest{Type: "t"}})
		require.NoError(t, err)
	}
	page, err := c.ScheduleList(ctx, "", 2)
	require.NoError(t, err)
	require.Len(t, page.Schedules, 2)
	assert.Equal(t, "s0", page.Next)
	all, err := c.ScheduleListAll(ctx)
	require.NoError(t, err)
	require.Len(t, all, 6)
	assert.Equal(t, "s4", all[5].Name)

	changed, err := c.SchedulePause(ctx, "nightly")
	require.NoError(t, err)
	assert.True(t, changed)
	s, err = c.ScheduleGet(ctx, "nightly")
	require.NoError(t, err)
	assert.True(t, s.Paused)
	assert.True(t, s.NextFire.IsZero())
	changed, err = c.ScheduleResume(ctx, "nightly")
	require.NoError(t, err)
	assert.True(t, changed)
	require.NoError(t, c.ScheduleDelete(ctx, "nightly"))
	_, err = c.ScheduleGet(ctx, "nightly")
	assert.True(t, client.IsCode(err, wire.CodeBadRequest), "%v", err)

	_, err = c.ScheduleAdd(ctx, client.ScheduleRequest{Name: "k", Cron: "@hourly", Task: client.SubmitRequest{Type: "t", Key: "k"}})
	assert.ErrorContains(t, err, "no key, trace id or dependencies")
	_, err = c.ScheduleAdd(ctx, client.ScheduleRequest{Name: "k", Cron: "@hourly"})
	assert.Error(t, err, "no task type")
}

// A run body: each firing submits the run; the schedule lists its name.
func TestClient_ScheduleRunBody(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	defer c.Close()
	run := &client.RunRequest{Name: "etl", Steps: []client.RunStepRequest{
		{ID: "fetch", Type: "echo", Args: map[string]string{"src": "s3://x"}},
		{ID: "load", Type: "echo", DependsOn: []string{"fetch"}, Args: map[string]string{"path": "${steps.fetch.out.path}"}},
	}}
	_, err = c.ScheduleAdd(ctx, client.ScheduleRequest{Name: "etl", Cron: "@hourly", Run: run})
	require.NoError(t, err)
	s, err := c.ScheduleGet(ctx, "etl")
	require.NoError(t, err)
	assert.Equal(t, "etl", s.Run)
	assert.Empty(t, s.TaskType)

	_, err = c.ScheduleAdd(ctx, client.ScheduleRequest{Name: "x", Cron: "@hourly", Run: run, Task: client.SubmitRequest{Type: "t"}})
	assert.ErrorContains(t, err, "not both")
	keyed := *run
	keyed.Key = "k"
	_, err = c.ScheduleAdd(ctx, client.ScheduleRequest{Name: "x", Cron: "@hourly", Run: &keyed})
	assert.ErrorContains(t, err, "no key or trace id")
	bad := *run
	bad.Steps = []client.RunStepRequest{{ID: "a", Type: "echo", Args: map[string]string{"p": "${steps.zzz.out.k}"}}}
	_, err = c.ScheduleAdd(ctx, client.ScheduleRequest{Name: "x", Cron: "@hourly", Run: &bad})
	assert.True(t, client.IsCode(err, wire.CodeBadRequest), "%v", err)
}
