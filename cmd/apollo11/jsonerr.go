package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/client"
)

// jsonMode reports whether a command's words, or APOLLO11_JSON, ask for
// JSON output. Its error is then printed as JSON too. The words are read
// as they stand, so an error in a flag after --json is JSON as well.
func jsonMode(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		if !hasVal {
			return true
		}
		on, err := strconv.ParseBool(val)
		return err == nil && on
	}
	on, err := strconv.ParseBool(os.Getenv(app.EnvName("json")))
	return err == nil && on
}

// jsonErr is the one line a command prints on stderr for its error under
// --json. The exit code is the one the text would have had.
type jsonErr struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
		Exit    int    `json:"exit"`
	} `json:"error"`
}

func printJSONErr(w io.Writer, cmd string, ee exitError) {
	var je jsonErr
	je.Error.Code = errorCode(ee)
	je.Error.Message = nameEnvSources(strings.TrimPrefix(ee.Err.Error(), cmd+": "))
	je.Error.Hint, je.Error.Exit = ee.Hint, ee.Code
	b, err := json.Marshal(je)
	if err != nil { // only strings and an int: cannot fail
		b = []byte(`{"error":{"code":"error","message":"cannot encode the error"}}`)
	}
	writeBounded(w, string(b)+"\n")
}

// errorCode names an error for scripts. It is the main control's code when
// it refused the request, else the kind of failure.
func errorCode(ee exitError) string {
	var refused *client.Error
	var netErr *net.OpError
	switch err := ee.Err; {
	case ee.Usage:
		return "usage"
	case errors.As(err, &refused):
		return string(refused.Code)
	case errors.Is(err, client.ErrOutcomeUnknown) || ee.Code == exitUnknown:
		return "outcome_unknown"
	case errors.Is(err, client.ErrAuthRequired):
		return "auth_required"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, client.ErrConnectionLost):
		return "connection_lost"
	case errors.As(err, &netErr):
		return "unreachable"
	}
	return "error"
}
