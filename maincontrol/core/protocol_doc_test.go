package core

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// TestProtocolDoc_MatchesCode keeps docs/protocol.md consistent with the
// code: every message type the core knows, every error code, every
// result_ack reason and every state name appears in it.
func TestProtocolDoc_MatchesCode(t *testing.T) {
	b, err := os.ReadFile("../../docs/protocol.md")
	require.NoError(t, err)
	doc := string(b)
	mentions := func(name string) bool {
		return strings.Contains(doc, "type="+name) || strings.Contains(doc, "`"+name+" ") ||
			strings.Contains(doc, "`"+name+"`") || strings.Contains(doc, "### "+name)
	}
	for _, typ := range wire.Kinds() {
		assert.True(t, mentions(string(typ)), "message type %s not in docs/protocol.md", typ)
	}
	for _, code := range []wire.Code{wire.CodeMalformed, wire.CodeFrameTooLarge, wire.CodeBadRequest,
		wire.CodeUnknownType, wire.CodeNotRegistered, wire.CodeUnsupportedProto, wire.CodeAuthFailed,
		wire.CodeNotPermitted, wire.CodeDuplicateExecutor, wire.CodeUnknownTask,
		wire.CodeIllegalTransition, wire.CodeQueueFull, wire.CodeUnavailable, wire.CodeConflict, wire.CodeUnknownRun, wire.CodeNotLeader} {
		assert.True(t, strings.Contains(doc, string(code)), "error code %s not in docs/protocol.md", code)
	}
	for _, r := range []wire.Reason{wire.ReasonUnknownTask, wire.ReasonStale, wire.ReasonCancelled,
		wire.ReasonIllegalTransition, wire.ReasonIllegalValue} {
		assert.True(t, strings.Contains(doc, string(r)), "result_ack reason %s not in docs/protocol.md", r)
	}
	for _, s := range AllStates {
		assert.True(t, strings.Contains(doc, s.String()), "state %s not in docs/protocol.md", s)
	}
	assert.True(t, strings.Contains(doc, "## Appendix: apollo11's readings"))
	assert.Contains(t, doc, "**Waits per connection.** A connection waits for at most 65,536 `done`",
		"the appendix gives maxWaitsPerConn")
	assert.Equal(t, 65_536, maxWaitsPerConn, "docs/protocol.md gives the cap")
}
