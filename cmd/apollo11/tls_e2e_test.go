package main_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

// TestTLS_DaemonsAndCLIOverMutualTLS runs the real binaries over mutual
// TLS: an executor daemon and the CLI against a main control with
// --tls-client-ca. A CLI without a client certificate is refused with a
// reason. SIGHUP reloads the main control's files rather than stopping it.
func TestTLS_DaemonsAndCLIOverMutualTLS(t *testing.T) {
	bin := testbin.Build(t)
	ca := tlsfilestest.NewCA(t, "e2e CA")
	sc, sk := ca.Issue(tlsfilestest.Leaf{Name: "maincontrol"})
	pc, pk := ca.Issue(tlsfilestest.Leaf{Name: "peer"})
	addr := testbin.FreeAddr(t)
	mc := testbin.Start(t, bin, nil, "maincontrol", "--listen", addr, "--data-dir", t.TempDir(),
		"--tls-cert", sc, "--tls-key", sk, "--tls-client-ca", ca.CAFile)
	waitOutput(t, mc, "main control ready", 1)
	assert.Contains(t, mc.Output(), "tls=true", "the ready line says the port needs TLS")
	peer := []string{"--tls-ca", ca.CAFile, "--tls-cert", pc, "--tls-key", pk}

	startExecutor(t, bin, addr, append([]string{"--id", "tls-ex", "--types", "echo"}, peer...)...)
	out, errOut, code := cli(t, bin, addr, append([]string{"submit", "--type", "echo", "--arg", "x=over-tls", "--wait"}, peer...)...)
	require.Equal(t, 0, code, "%s%s\nmain control:\n%s", out, errOut, mc.Output())
	assert.Contains(t, out, "over-tls")

	_, errOut, code = cli(t, bin, addr, "stats", "--tls-ca", ca.CAFile, "--reconnect-timeout", "0")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "certificate required")
	assert.Contains(t, errOut, "requires a client certificate: give --tls-cert and --tls-key", "none was given")

	_, errOut, code = cli(t, bin, addr, "stats", "--reconnect-timeout", "0", "--request-timeout", "2s")
	assert.NotEqual(t, 0, code, "a plaintext client gets no welcome")
	assert.Contains(t, errOut, "may require TLS")

	// A new CA's certificate in the same files, then SIGHUP.
	newCA := tlsfilestest.NewCA(t, "e2e CA 2")
	nc, nk := newCA.Issue(tlsfilestest.Leaf{Name: "maincontrol2"})
	tlsfilestest.Copy(t, nc, sc)
	tlsfilestest.Copy(t, nk, sk)
	mc.Signal(syscall.SIGHUP)
	waitOutput(t, mc, "TLS files reloaded", 1)
	require.False(t, mc.Exited(), "SIGHUP reloads TLS files, it does not stop")
	_, errOut, code = cli(t, bin, addr, append([]string{"stats"}, peer...)...)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "unknown authority", "the new certificate is served")
	out, errOut, code = cli(t, bin, addr, "stats", "--tls-ca", newCA.CAFile, "--tls-cert", pc, "--tls-key", pk)
	require.Equal(t, 0, code, "%s%s", out, errOut)

	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())
}

// TestTLS_ExecutorReloadsItsFilesOnHangup: the executor daemon reads its
// TLS files again on SIGHUP rather than stopping, and its next connection
// verifies the main control against the new CA bundle.
func TestTLS_ExecutorReloadsItsFilesOnHangup(t *testing.T) {
	bin := testbin.Build(t)
	ca, newCA := tlsfilestest.NewCA(t, "e2e CA"), tlsfilestest.NewCA(t, "e2e CA 2")
	sc, sk := ca.Issue(tlsfilestest.Leaf{Name: "maincontrol"})
	pc, pk := ca.Issue(tlsfilestest.Leaf{Name: "peer"})
	bundle := t.TempDir() + "/ca.pem"
	tlsfilestest.Copy(t, ca.CAFile, bundle)
	addr, data := testbin.FreeAddr(t), t.TempDir()
	mcArgs := []string{"maincontrol", "--listen", addr, "--data-dir", data,
		"--tls-cert", sc, "--tls-key", sk, "--tls-client-ca", ca.CAFile}
	mc := testbin.Start(t, bin, nil, mcArgs...)
	waitOutput(t, mc, "main control ready", 1)
	ex := startExecutor(t, bin, addr, "--id", "tls-hup", "--types", "echo",
		"--tls-ca", bundle, "--tls-cert", pc, "--tls-key", pk)
	waitOutput(t, ex, `msg=registered`, 1)

	// The main control moves to a new CA's certificate: the executor is
	// told first, then the main control restarts with it.
	tlsfilestest.Copy(t, newCA.CAFile, bundle)
	ex.Signal(syscall.SIGHUP)
	waitOutput(t, ex, "TLS files reloaded", 1)
	require.False(t, ex.Exited(), "SIGHUP reloads the executor's TLS files, it does not stop it")
	nc, nk := newCA.Issue(tlsfilestest.Leaf{Name: "maincontrol2"})
	tlsfilestest.Copy(t, nc, sc)
	tlsfilestest.Copy(t, nk, sk)
	mc.Kill()
	_ = mc.Wait(20 * time.Second)
	mc = testbin.Start(t, bin, nil, mcArgs...)
	waitOutput(t, mc, "main control ready", 1)
	waitOutput(t, ex, `msg=registered`, 2)
	out, errOut, code := cli(t, bin, addr, "submit", "--type", "echo", "--arg", "x=rotated", "--wait",
		"--tls-ca", newCA.CAFile, "--tls-cert", pc, "--tls-key", pk)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "rotated")

	ex.Signal(syscall.SIGTERM)
	require.NoError(t, ex.Wait(20*time.Second), ex.Output())
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())
}
