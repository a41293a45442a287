package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/wire"
)

// The day-two requests against the real main control: state repair with
// compare-and-set, pause and resume, and the type listing.
func TestClient_OpsAgainstRealMainControl(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	defer c.Close()

	ch, err := c.StateSet(ctx, "mode", "on")
	require.NoError(t, err)
	assert.Equal(t, client.StateChange{Key: "mode", StateVersion: 1, Changed: true}, ch)
	_, err = c.StateSetIf(ctx, "mode", "off", 7)
	var conflict *client.StateConflict
	require.True(t, errors.As(err, &conflict), "%v", err)
	assert.EqualValues(t, 1, conflict.Current)
	assert.True(t, client.IsCode(err, wire.CodeConflict))
	ch, err = c.StateDelIf(ctx, "mode", 1)
	require.NoError(t, err)
	assert.Equal(t, client.StateChange{Key: "mode", StateVersion: 2, Changed: true}, ch)
	ch, err = c.StateDel(ctx, "mode")
	require.NoError(t, err)
	assert.False(t, ch.Changed)
	_, err = c.StateSet(ctx, "Bad", "x")
	assert.Error(t, err, "checked before sending")

	changed, err := c.Pause(ctx, "a")
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = c.Pause(ctx, "a")
	require.NoError(t, err)
	assert.False(t, changed)
	for _, typ := range []string{"b", "c", "d"} {
		_, err := c.Submit(ctx, client.SubmitRequest{Type: typ})
		require.NoError(t, err)
	}
	page, err := c.TypeList(ctx, "", true, 2)
	require.NoError(t, err)
	require.Len(t, page.Types, 2)
	assert.True(t, page.More)
	assert.Equal(t, client.TypeInfo{Name: "a", Paused: true}, page.Types[0])
	assert.Equal(t, client.TypeInfo{Name: "b", Pending: 1}, page.Types[1])
	all, err := c.TypeListAll(func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 5*time.Second) })
	require.NoError(t, err)
	var names []string
	for _, ti := range all {
		names = append(names, ti.Name)
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, names)
	changed, err = c.Resume(ctx, "a")
	require.NoError(t, err)
	assert.True(t, changed)
}
