package main_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
)

// adminFiles writes a shared token and an admin token, private to the
// user, and returns their paths.
func adminFiles(t *testing.T) (token, admin string) {
	dir := t.TempDir()
	token, admin = filepath.Join(dir, "token"), filepath.Join(dir, "admin")
	require.NoError(t, os.WriteFile(token, []byte("shared-token-0123456789\n"), 0o600))
	require.NoError(t, os.WriteFile(admin, []byte("admin-token-0123456789\n"), 0o600))
	return token, admin
}

// A client proves the admin token with --admin-token-file or its
// environment variable; a wrong one is refused with auth_failed, and
// none leaves it an ordinary client.
func TestCLI_AdminTokenHandshake(t *testing.T) {
	bin := testbin.Build(t)
	token, admin := adminFiles(t)
	wrong := filepath.Join(t.TempDir(), "wrong")
	require.NoError(t, os.WriteFile(wrong, []byte("not-the-admin-token\n"), 0o600))
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "", "--token-file", token, "--admin-token-file", admin)

	_, errOut, code := cli(t, bin, mc.Addr, "stats", "--token-file", token)
	assert.Equal(t, 0, code, "no admin proof: an ordinary client: %s", errOut)
	_, errOut, code = cli(t, bin, mc.Addr, "stats", "--token-file", token, "--admin-token-file", admin)
	assert.Equal(t, 0, code, errOut)
	_, errOut, code = cli(t, bin, mc.Addr, "stats", "--token-file", token, "--admin-token-file", wrong)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "auth_failed")
	assert.Contains(t, errOut, "admin authentication failed")

	cmd := cliCmd(bin, mc.Addr, "stats", "--token-file", token)
	cmd.Env = append(os.Environ(), "APOLLO11_ADMIN_TOKEN_FILE="+wrong)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the environment variable is read: %s", out)
	assert.Contains(t, string(out), "admin authentication failed")
}

// A main control whose admin token is its shared token would make every
// peer an admin: it refuses to start.
func TestMaincontrol_AdminTokenMustDiffer(t *testing.T) {
	bin := testbin.Build(t)
	token, _ := adminFiles(t)
	p := testbin.Start(t, bin, nil, "maincontrol", "--listen", testbin.FreeAddr(t), "--data-dir", "",
		"--token-file", token, "--admin-token-file", token)
	require.Eventually(t, p.Exited, 20*time.Second, 20*time.Millisecond)
	assert.Contains(t, p.Output(), "the admin token is the shared token")
}

// welcome lists the server's groups in features=; a client written for
// v1, which knows nothing of it, says hello and submits as before.
func TestWelcome_FeaturesIgnoredByV1Client(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	conn, err := net.DialTimeout("tcp", mc.Addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	r := wire.NewReader(conn, 0)
	w, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, "welcome", w.Type())
	require.True(t, w.Has("features"), "welcome: %s", w)
	features, err := w.List("features")
	require.NoError(t, err, "features is a list")
	for _, f := range features {
		assert.NotContains(t, f, " ")
	}

	// A v1 client: hello with the keys of section 3 only, then a submit.
	send := func(typ string, kv ...string) {
		m := wire.NewMessage(wire.Kind(typ))
		for i := 0; i+1 < len(kv); i += 2 {
			m.Set(kv[i], kv[i+1])
		}
		frame, err := wire.AppendFrame(nil, m)
		require.NoError(t, err)
		_, err = conn.Write(frame)
		require.NoError(t, err)
	}
	send("hello", "req", "h", "proto", "1")
	ok, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, "hello_ok", ok.Type(), "%s", ok)
	send("submit", "req", "s", "task_type", "echo")
	sub, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "submitted", sub.Type(), "%s", sub)
	assert.Equal(t, "s", sub.Value("req"))
	assert.Equal(t, "1", sub.Value("task_id"))
}

// cliCmd is the command cli runs, for a test that sets its environment.
func cliCmd(bin, addr string, args ...string) *exec.Cmd {
	return exec.Command(bin, append([]string{args[0], "--addr", addr}, args[1:]...)...)
}

// requeue, cancel by filter and purge through the CLI against the real
// binary: the admin token gates them, --dry-run changes nothing, the
// changes survive kill -9, and /metrics and the log show them.
func TestCLI_RequeueCancelPurge(t *testing.T) {
	bin := testbin.Build(t)
	token, admin := adminFiles(t)
	dir := t.TempDir()
	httpAddr := testbin.FreeAddr(t)
	args := []string{"--data-dir", dir, "--token-file", token, "--admin-token-file", admin, "--http-listen", httpAddr}
	mc := testbin.StartMaincontrol(t, bin, args...)
	run := func(args ...string) (string, string, int) {
		return cli(t, bin, mc.Addr, append([]string{args[0], "--token-file", token}, args[1:]...)...)
	}
	adm := func(args ...string) string {
		t.Helper()
		out, errOut, code := run(append([]string{args[0], "--admin-token-file", admin}, args[1:]...)...)
		require.Equal(t, 0, code, "%v: %s%s", args, out, errOut)
		return out
	}
	var ids []string
	for range 2 {
		out, errOut, code := run("submit", "--type", "nobody")
		require.Equal(t, 0, code, errOut)
		ids = append(ids, strings.Fields(out)[1])
	}

	_, errOut, code := run("cancel", "--type", "nobody")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not_permitted", "no admin proof")
	assert.Contains(t, errOut, "pass --admin-token-file FILE", "a hint in command-line terms")

	assert.Equal(t, "2 tasks would be cancelled\n", adm("cancel", "--type", "nobody", "--dry-run"))
	assert.Equal(t, "2 tasks cancelled\n", adm("cancel", "--type", "nobody", "--state", "pending"))
	out := adm("requeue", "--reason", "disk replaced", ids[0])
	assert.Equal(t, "task "+ids[0]+" requeued: pending", strings.SplitN(out, " (", 2)[0])
	assert.Equal(t, "1 task requeued\n", adm("requeue", "--type", "nobody", "--state", "cancelled", "--reason", "bulk"))

	mc.Kill() // kill -9: both requeues were confirmed, so both are durable
	mc = testbin.StartMaincontrolEnv(t, bin, nil, mc.Addr, args...)
	out = adm("status", "--json", ids[0])
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, "pending", st["state"])
	assert.Equal(t, "disk replaced", st["requeue_reason"])
	assert.EqualValues(t, 1, st["requeues"])
	out = adm("status", ids[1])
	assert.Contains(t, out, "requeued 1 times; last reason: bulk")

	adm("cancel", "--type", "nobody")
	out = adm("purge", "--type", "nobody", "--dry-run", "--json")
	assert.JSONEq(t, `{"count":2,"dry_run":true}`, out)
	out = adm("purge", "--type", "nobody", "--json")
	assert.JSONEq(t, `{"count":2}`, out)
	_, errOut, code = run("status", ids[0])
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unknown_task")

	cmd := cliCmd(bin, mc.Addr, "purge", "--token-file", token, "--admin-token-file", admin, "--state", "all")
	cmd.Env = append(os.Environ(), "APOLLO11_TYPE=nobody")
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(b), "--type is set by APOLLO11_TYPE in the environment")

	resp, err := http.Get("http://" + httpAddr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `apollo11_admin_tasks_total{op="purge_where"} 2`)
	assert.Contains(t, string(body), `apollo11_admin_requests_total{op="purge_where"} 2`, "the dry run too")
	assert.Contains(t, mc.Output(), "admin purge_where")
	assert.Contains(t, mc.Output(), "client=apollo11-cli")
}
