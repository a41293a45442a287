package main

import (
	"errors"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// adminTokenHint tells how to pass the admin token when the main control
// refused a command for the lack of it. The server's message speaks
// protocol, not command line. It is empty for any other error.
func adminTokenHint(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code == wire.CodeNotPermitted {
		return "this command needs the main control's admin token: pass --admin-token-file FILE"
	}
	return ""
}

// tokenHint tells how to pass the shared token when the main control asked
// for one and the command had none. The client's error names the lack,
// not the flag that fills it. It is empty for any other error.
func tokenHint(err error) string {
	if errors.Is(err, client.ErrAuthRequired) {
		return "pass the shared token: --token-file FILE (or " + app.EnvName("token-file") + "=FILE)"
	}
	return ""
}
