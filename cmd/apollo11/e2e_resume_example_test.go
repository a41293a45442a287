package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// The README's resume sequence runs as written: docs/examples/resume.yaml
// fails while its file is missing, and once the file exists a resume by
// key finishes it without running fetch again. The file is the test's
// own (--var ready), so runs beside it do not share /tmp/apollo11-ready.
func TestE2E_ResumeExample(t *testing.T) {
	const test = "/usr/bin/test"
	if _, err := os.Stat(test); err != nil {
		t.Skipf("the example runs %s: %v", test, err)
	}
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "resume-1", "--types", "echo,exec",
		"--allow-exec", "--exec-allow", test)
	e := &runsEnv{t: t, bin: bin, dir: t.TempDir(), addr: mc.Addr}
	ready := filepath.Join(e.dir, "ready")
	file, err := filepath.Abs("../../docs/examples/resume.yaml")
	require.NoError(t, err)

	out, errOut, code := e.pipeline("run", file, "--var", "ready="+ready, "--wait")
	require.Equal(t, 1, code, "the run fails while the file is missing: %s\n%s", out, errOut)
	assert.Contains(t, out, "run 1 resume (key resume-demo): failed")
	assert.Contains(t, out, "resume with: apollo11 pipeline resume 1")

	require.NoError(t, os.WriteFile(ready, nil, 0o644)) // the fix, outside the file
	out, errOut, code = e.pipeline("resume", "resume-demo", "--wait")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "succeeded, resumed 1 time")
	assert.Contains(t, errOut, "requeued check, report", "fetch is not run again")
}
