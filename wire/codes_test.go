package wire_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/wire"
)

func TestCode_CloseAfter(t *testing.T) {
	tests := []struct {
		code  wire.Code
		close bool
	}{
		{wire.CodeMalformed, true},
		{wire.CodeFrameTooLarge, true},
		{wire.CodeNotRegistered, true},
		{wire.CodeUnsupportedProto, true},
		{wire.CodeAuthFailed, true},
		{wire.CodeDuplicateExecutor, true},
		{wire.CodeBadRequest, false},
		{wire.CodeUnknownType, false},
		{wire.CodeNotPermitted, false},
		{wire.CodeUnknownTask, false},
		{wire.CodeIllegalTransition, false},
		{wire.CodeQueueFull, false},
		{wire.CodeUnavailable, false},
		{wire.CodeNotLeader, false}, // a register refused so is closed by the main control, not by the code
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			assert.Equal(t, tt.close, tt.code.CloseAfter())
		})
	}
}
