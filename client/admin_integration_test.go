package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/wire"
)

// Options.AdminToken is proven in hello (protocol section 8.2): the
// right one makes Admin true, a wrong one fails Dial with auth_failed,
// and none leaves an ordinary client.
func TestDial_AdminToken(t *testing.T) {
	admin := []byte("admin-token-0123456789")
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet(), Core: core.Config{AdminToken: admin}})
	ctx := context.Background()

	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet(), AdminToken: admin})
	require.NoError(t, err)
	assert.True(t, c.Admin())
	assert.NotNil(t, c.Features(), "a v1.1 main control lists its groups")
	c.Close()

	c, err = client.Dial(ctx, addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	assert.False(t, c.Admin())
	c.Close()

	_, err = client.Dial(ctx, addr, client.Options{Logger: quiet(), AdminToken: []byte("wrong")})
	var refused *client.Error
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, wire.CodeAuthFailed, refused.Code)

	// Without an admin token on the main control every client may.
	addr, _ = maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	c, err = client.Dial(ctx, addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	assert.True(t, c.Admin())
	c.Close()
}
