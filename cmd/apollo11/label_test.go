package main_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// submit --label is kept across a restart of the main control, and status
// shows it; an overlong label is refused with the reason.
func TestCLI_Label(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	id := submitID(t, bin, mc.Addr, "--type", "nobody", "--label", "nightly batch 7")

	_, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "nobody", "--label", strings.Repeat("x", 257))
	assert.Equal(t, 2, code, "submit exits 2 on an error that is not the task's outcome")
	assert.Contains(t, errOut, "bad_request")
	assert.Contains(t, errOut, "label: longer than 256 bytes")

	mc.Kill()
	_ = mc.Wait(patience.Scale(10 * time.Second))
	mc = testbin.StartMaincontrolEnv(t, bin, nil, mc.Addr, "--data-dir", dir)
	out, errOut, code := cli(t, bin, mc.Addr, "status", strconv.FormatUint(id, 10))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "\nlabel nightly batch 7\n")
	out, _, code = cli(t, bin, mc.Addr, "status", "--json", strconv.FormatUint(id, 10))
	require.Equal(t, 0, code)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, "nightly batch 7", st["label"])
}
