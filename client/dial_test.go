package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

// dialAsync starts Dial in the background.
func dialAsync(ctx context.Context, f *fakeServer, opts client.Options) <-chan error {
	ch := make(chan error, 1)
	opts.Logger = slog.New(slog.DiscardHandler)
	go func() {
		c, err := client.Dial(ctx, f.addr(), opts)
		if c != nil {
			c.Close()
		}
		ch <- err
	}()
	return ch
}

func wait(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitFor):
		t.Fatal("Dial did not return")
		return nil
	}
}

// greetOnce listens on loopback and greets the first connection with
// greet instead of a welcome, holding it open for a second; the listener
// closes when the test ends.
func greetOnce(t *testing.T, greet func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err == nil {
			greet(c)
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	return ln.Addr().String()
}

// A welcome or hello_ok the client cannot decode is answered with an error
// frame before the close, as after the handshake (spec sections 1 and 2);
// another service's text banner is not.
func TestDial_RefusesUndecodableHandshakeFrame(t *testing.T) {
	readError := func(t *testing.T, sc *srvConn, code wire.Code) {
		t.Helper()
		require.NoError(t, sc.Net.SetReadDeadline(time.Now().Add(waitFor)))
		m, err := sc.R.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, "error", m.Type())
		assert.Equal(t, string(code), m.Value("code"))
		_, err = sc.R.ReadMessage()
		assert.ErrorIs(t, err, io.EOF, "then the client closes")
	}
	for _, tc := range fakemain.BrokenFrames {
		t.Run("welcome "+tc.Name, func(t *testing.T) {
			f := mustStartFakeServer(t, fakemain.WithGreeting(tc.Raw))
			done := dialAsync(context.Background(), f, client.Options{})
			readError(t, f.accept(t), tc.Code)
			assert.ErrorContains(t, wait(t, done), "cannot read welcome")
		})
		t.Run("hello_ok "+tc.Name, func(t *testing.T) {
			f := mustStartFakeServer(t)
			done := dialAsync(context.Background(), f, client.Options{})
			sc := f.accept(t)
			sc.expect("hello")
			sc.SendRaw(tc.Raw)
			readError(t, sc, tc.Code)
			assert.ErrorContains(t, wait(t, done), "cannot read hello_ok")
		})
	}
	t.Run("another service", func(t *testing.T) {
		f := mustStartFakeServer(t, fakemain.WithGreeting([]byte("SSH-2.0-OpenSSH_9.6\r\n")))
		done := dialAsync(context.Background(), f, client.Options{})
		sc := f.accept(t)
		require.Error(t, wait(t, done))
		require.NoError(t, sc.Net.SetReadDeadline(time.Now().Add(waitFor)))
		n, err := sc.Net.Read(make([]byte, 64))
		assert.Zero(t, n, "nothing sent to a service that is not apollo11")
		if !errors.Is(err, syscall.ECONNRESET) { // a close with our bytes unread
			assert.ErrorIs(t, err, io.EOF)
		}
	})
}

func TestDial(t *testing.T) {
	t.Run("no auth", func(t *testing.T) {
		f := mustStartFakeServer(t)
		done := dialAsync(context.Background(), f, client.Options{Name: "my tool", Token: []byte("unused")})
		sc := f.accept(t)
		m := sc.hello()
		assert.Equal(t, "1", m.Value("proto"))
		assert.Equal(t, "my tool", m.Value("client"))
		assert.False(t, m.Has("auth"), "no auth sent with auth=none, token or not")
		require.NoError(t, wait(t, done))
	})
	t.Run("hmac", func(t *testing.T) {
		f := mustStartFakeServer(t, fakemain.WithAuth())
		done := dialAsync(context.Background(), f, client.Options{Token: []byte("s3cret")})
		sc := f.accept(t)
		m := sc.expect("hello")
		assert.Equal(t, auth.Sign([]byte("s3cret"), sc.Nonce), m.Value("auth"))
		assert.True(t, auth.Verify([]byte("s3cret"), sc.Nonce, m.Value("auth")))
		assert.False(t, m.Has("client"))
		sc.send("hello_ok", "req", m.Value("req"))
		require.NoError(t, wait(t, done))
	})
	t.Run("auth refused", func(t *testing.T) {
		f := mustStartFakeServer(t, fakemain.WithAuth())
		done := dialAsync(context.Background(), f, client.Options{Token: []byte("wrong")})
		sc := f.accept(t)
		m := sc.expect("hello")
		sc.send("error", "req", m.Value("req"), "code", "auth_failed", "message", "bad auth")
		sc.Net.Close()
		err := wait(t, done)
		assert.True(t, client.IsCode(err, wire.CodeAuthFailed), "%v", err)
	})
	t.Run("auth required without token", func(t *testing.T) {
		f := mustStartFakeServer(t, fakemain.WithAuth())
		done := dialAsync(context.Background(), f, client.Options{})
		f.accept(t)
		assert.ErrorIs(t, wait(t, done), client.ErrAuthRequired)
	})
	t.Run("no welcome", func(t *testing.T) {
		addr := greetOnce(t, func(c net.Conn) { _ = fakemain.WriteMsg(c, "hello_ok", "req", "0") })
		_, err := client.Dial(context.Background(), addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
		assert.ErrorContains(t, err, "expected welcome")
	})
	t.Run("another service", func(t *testing.T) {
		addr := greetOnce(t, func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n")) })
		_, err := client.Dial(context.Background(), addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
		assert.ErrorContains(t, err, "cannot read welcome (is this an apollo11 main control?): frame too large")
		assert.ErrorIs(t, err, wire.ErrFrameTooLarge)
	})
	t.Run("context cancelled during handshake", func(t *testing.T) {
		f := mustStartFakeServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := dialAsync(ctx, f, client.Options{})
		f.accept(t).expect("hello") // and never answer
		start := time.Now()
		cancel()
		err := wait(t, done)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Less(t, time.Since(start), time.Second)
	})
	t.Run("handshake timeout", func(t *testing.T) {
		f := mustStartFakeServer(t)
		done := dialAsync(context.Background(), f, client.Options{DialTimeout: 100 * time.Millisecond})
		f.accept(t).expect("hello")
		var ne net.Error
		err := wait(t, done)
		require.True(t, errors.As(err, &ne), "%v", err)
		assert.True(t, ne.Timeout())
		assert.ErrorIs(t, err, context.DeadlineExceeded, "as a dial that times out")
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	})
	t.Run("no welcome within the dial timeout", func(t *testing.T) {
		addr := greetOnce(t, func(net.Conn) {}) // then silent for a second
		_, err := client.Dial(context.Background(), addr, client.Options{DialTimeout: 100 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "cannot read welcome: handshake not done within the dial timeout")
	})
	t.Run("nothing listening", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		_, err = client.Dial(context.Background(), addr, client.Options{})
		assert.ErrorContains(t, err, "cannot connect")
	})
}
