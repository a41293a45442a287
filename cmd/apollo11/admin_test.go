package main_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
