package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// SubmitRequest.Label reaches the main control, and Query shows it back.
func TestClient_Label(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	defer c.Close()
	sub, err := c.Submit(ctx, client.SubmitRequest{Type: "t", Label: "batch=7, row 3"})
	require.NoError(t, err)
	st, err := c.Query(ctx, sub.ID)
	require.NoError(t, err)
	assert.Equal(t, "batch=7, row 3", st.Label)

	plain, err := c.Submit(ctx, client.SubmitRequest{Type: "t"})
	require.NoError(t, err)
	st, err = c.Query(ctx, plain.ID)
	require.NoError(t, err)
	assert.Empty(t, st.Label)

	_, err = c.Submit(ctx, client.SubmitRequest{Type: "t", Label: strings.Repeat("x", 257)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad_request")
}
