package builtin_test

import (
	"context"
	"testing"
	"time"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/executor/builtin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func task(args map[string]string) *executor.Task {
	return &executor.Task{ID: 1, Version: 1, Type: "test", Args: args}
}

func TestEcho(t *testing.T) {
	args := map[string]string{"a": "1", "b.c": "x = y\nz", "empty": ""}
	res, err := builtin.Echo().Handle(context.Background(), task(args))
	require.NoError(t, err)
	assert.Equal(t, args, res.Out)
	res.Out["a"] = "changed"
	assert.Equal(t, "1", args["a"], "out is a copy")

	res, err = builtin.Echo().Handle(context.Background(), task(nil))
	require.NoError(t, err)
	assert.Empty(t, res.Out)
}

func TestSleep(t *testing.T) {
	tests := []struct {
		name      string
		args      map[string]string
		permanent bool
	}{
		{"ok", map[string]string{"ms": "20"}, false},
		{"zero", map[string]string{"ms": "0"}, false},
		{"missing", nil, true},
		{"not a number", map[string]string{"ms": "abc"}, true},
		{"negative", map[string]string{"ms": "-5"}, true},
		{"leading zero", map[string]string{"ms": "05"}, true},
		{"too large", map[string]string{"ms": "18446744073709551615"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := builtin.Sleep().Handle(context.Background(), task(tc.args))
			if tc.permanent {
				require.Error(t, err)
				assert.True(t, executor.IsPermanent(err), "%v", err)
				return
			}
			require.NoError(t, err)
			if tc.args["ms"] == "20" {
				assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		_, err := builtin.Sleep().Handle(ctx, task(map[string]string{"ms": "60000"}))
		assert.ErrorIs(t, err, context.Canceled)
		assert.False(t, executor.IsPermanent(err))
		assert.Less(t, time.Since(start), 5*time.Second)
	})
}

func TestFail(t *testing.T) {
	tests := []struct {
		name      string
		args      map[string]string
		text      string
		permanent bool
	}{
		{"defaults", nil, builtin.DefaultFailError, false},
		{"error text", map[string]string{"error": "boom"}, "boom", false},
		{"empty error text", map[string]string{"error": ""}, builtin.DefaultFailError, false},
		{"retryable true", map[string]string{"retryable": "true"}, builtin.DefaultFailError, false},
		{"not retryable", map[string]string{"retryable": "false", "error": "no"}, "no", true},
		{"bad retryable", map[string]string{"retryable": "yes"}, `fail: bad arg.retryable "yes": want true or false`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := builtin.Fail().Handle(context.Background(), task(tc.args))
			require.Error(t, err)
			assert.Equal(t, tc.text, err.Error())
			assert.Equal(t, tc.permanent, executor.IsPermanent(err))
		})
	}
}
