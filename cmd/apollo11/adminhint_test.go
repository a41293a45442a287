package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

func TestAdminTokenHint(t *testing.T) {
	refused := fmt.Errorf("cancel_where: %w", &client.Error{Code: wire.CodeNotPermitted,
		Message: `"cancel_where" needs the admin token: prove it in hello with admin_auth (the main control has --admin-token-file)`})
	assert.Contains(t, adminTokenHint(refused), "pass --admin-token-file FILE")
	assert.Empty(t, adminTokenHint(&client.Error{Code: wire.CodeBadRequest, Message: "bad filter"}))
	assert.Empty(t, adminTokenHint(fmt.Errorf("dial: refused")))

	var out bytes.Buffer
	printErr(&out, "cancel", refused, adminTokenHint(refused))
	assert.Contains(t, out.String(), "admin_auth", "the server's message is kept")
	assert.Contains(t, out.String(), "pass --admin-token-file FILE")
}
