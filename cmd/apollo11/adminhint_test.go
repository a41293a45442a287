package main

import (
	"bytes"
	"encoding/json"
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

// A client without the token it needs is told which flag gives it, in the
// text and in the --json error's hint.
func TestTokenHint(t *testing.T) {
	err := fmt.Errorf("the main control at 127.0.0.1:1969 refused this client: %w", client.ErrAuthRequired)
	assert.Contains(t, tokenHint(err), "--token-file FILE")
	assert.Contains(t, tokenHint(err), "APOLLO11_TOKEN_FILE")
	assert.Empty(t, tokenHint(fmt.Errorf("dial: refused")))

	var out bytes.Buffer
	printJSONErr(&out, "stats", exitError{Code: 1, Err: err, Hint: tokenHint(err)})
	var je jsonErr
	assert.NoError(t, json.Unmarshal(out.Bytes(), &je), out.String())
	assert.Equal(t, "auth_required", je.Error.Code)
	assert.Contains(t, je.Error.Hint, "--token-file FILE")
}
