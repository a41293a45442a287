package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/wire"
)

func TestClient_Errors(t *testing.T) {
	tests := []struct {
		code wire.Code
		call func(c *client.Client) error
	}{
		{wire.CodeQueueFull, func(c *client.Client) error {
			_, err := c.Submit(context.Background(), client.SubmitRequest{Type: "x"})
			return err
		}},
		{wire.CodeUnknownTask, func(c *client.Client) error {
			_, err := c.Query(context.Background(), 5)
			return err
		}},
		{wire.CodeIllegalTransition, func(c *client.Client) error { return c.Cancel(context.Background(), 5) }},
		{wire.CodeBadRequest, func(c *client.Client) error {
			_, _, err := c.List(context.Background(), "nope", 0, 0)
			return err
		}},
	}
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			go func() {
				m, err := sc.R.ReadMessage()
				if assert.NoError(t, err) {
					sc.send("error", "req", m.Value("req"), "code", string(tc.code), "message", "because")
				}
			}()
			err := tc.call(c)
			var e *client.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, e.Code)
			assert.Equal(t, "because", e.Message)
			assert.True(t, client.IsCode(err, tc.code))
			assert.Equal(t, tc.code == wire.CodeQueueFull, client.IsQueueFull(err))
		})
	}
	t.Run("unexpected reply type", func(t *testing.T) {
		go func() {
			m := sc.expect("cancel")
			sc.send("submitted", "req", m.Value("req"), "task_id", "1")
		}()
		assert.ErrorContains(t, c.Cancel(context.Background(), 1), `unexpected reply "submitted"`)
	})
}

func TestClient_ContextCancel(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := c.Query(ctx, 1)
		errs <- err
	}()
	m := sc.expect("query")
	cancel()
	select {
	case err := <-errs:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitFor):
		t.Fatal("Query did not return on cancel")
	}
	// The late reply is dropped; the connection goes on.
	sc.send("task_state", "req", m.Value("req"), "task_id", "1")
	go func() {
		m := sc.expect("cancel")
		sc.send("cancelled", "req", m.Value("req"), "task_id", "2")
	}()
	require.NoError(t, c.Cancel(context.Background(), 2))
}

func TestClient_ConnectionLost(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{Reconnect: client.Reconnect{Off: true}})
	const n = 5
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.Query(context.Background(), uint64(i+1))
			errs <- err
		}()
	}
	for range n {
		sc.expect("query")
	}
	sc.send("error", "code", "malformed", "message", "bad frame")
	sc.Net.Close()
	for range n {
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, client.ErrConnectionLost)
			assert.True(t, client.IsCode(err, wire.CodeMalformed), "the server's last word is kept: %v", err)
		case <-time.After(waitFor):
			t.Fatal("pending call not failed")
		}
	}
	// Later calls fail fast.
	start := time.Now()
	_, err := c.Submit(context.Background(), client.SubmitRequest{Type: "x"})
	assert.ErrorIs(t, err, client.ErrConnectionLost)
	assert.Less(t, time.Since(start), time.Second)
	assert.NoError(t, c.Close())
}

// A frame the client cannot decode is answered with an error frame, as
// every peer answers one (spec sections 1 and 2), and ends the connection.
func TestClient_RefusesUndecodableFrame(t *testing.T) {
	for _, tc := range fakemain.BrokenFrames {
		t.Run(tc.Name, func(t *testing.T) {
			f := mustStartFakeServer(t)
			c, sc := mustDial(t, f, client.Options{Reconnect: client.Reconnect{Off: true}})
			sc.SendRaw(tc.Raw)
			require.NoError(t, sc.Net.SetReadDeadline(time.Now().Add(waitFor)))
			m, err := sc.R.ReadMessage()
			require.NoError(t, err)
			assert.Equal(t, "error", m.Type())
			assert.Equal(t, string(tc.Code), m.Value("code"))
			_, err = sc.R.ReadMessage()
			assert.ErrorIs(t, err, io.EOF, "then the client closes")
			_, err = c.Stats(context.Background())
			assert.ErrorIs(t, err, client.ErrConnectionLost)
		})
	}
}

func TestClient_Close(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	errs := make(chan error, 1)
	go func() {
		_, err := c.Query(context.Background(), 1)
		errs <- err
	}()
	sc.expect("query")
	require.NoError(t, c.Close())
	select {
	case err := <-errs:
		assert.ErrorIs(t, err, client.ErrClosed)
	case <-time.After(waitFor):
		t.Fatal("pending call not failed by Close")
	}
	_, err := c.Query(context.Background(), 1)
	assert.ErrorIs(t, err, client.ErrClosed)
	assert.NoError(t, c.Close(), "Close twice")
}

func TestClient_FrameTooLarge(t *testing.T) {
	f := mustStartFakeServer(t, fakemain.WithMaxFrame(256))
	c, sc := mustDial(t, f, client.Options{})
	_, err := c.Submit(context.Background(), client.SubmitRequest{Type: "echo", Args: map[string]string{"big": strings.Repeat("x", 300)}})
	assert.ErrorIs(t, err, wire.ErrFrameTooLarge)
	// Nothing was sent; the client still works.
	go func() {
		m := sc.expect("submit")
		assert.Equal(t, "echo", m.Value("task_type"))
		sc.send("submitted", "req", m.Value("req"), "task_id", "1")
	}()
	_, err = c.Submit(context.Background(), client.SubmitRequest{Type: "echo"})
	assert.NoError(t, err)
}

func TestIsCode(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &client.Error{Code: wire.CodeQueueFull})
	assert.True(t, client.IsQueueFull(err))
	assert.True(t, client.IsCode(err, wire.CodeQueueFull))
	assert.False(t, client.IsCode(err, wire.CodeBadRequest))
	assert.False(t, client.IsQueueFull(errors.New("queue_full")))
	assert.False(t, client.IsQueueFull(nil))
	assert.Equal(t, "main control error queue_full", (&client.Error{Code: wire.CodeQueueFull}).Error())
}

// A main control that stops reading holds no caller past its context:
// requests queue for a writer goroutine, every call returns at its
// deadline, and once too much is queued calls fail at once with
// ErrNotReading instead of growing the queue.
func TestClient_PeerNotReading(t *testing.T) {
	f := mustStartFakeServer(t)
	c, _ := mustDial(t, f, client.Options{}) // the server never reads again
	big := strings.Repeat("x", 500<<10)
	sawNotReading := false
	for i := range 60 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		_, err := c.Submit(ctx, client.SubmitRequest{Type: "x", Args: map[string]string{"p": big}})
		cancel()
		require.Error(t, err, "submit %d", i)
		require.Less(t, time.Since(start), patience.Scale(2*time.Second), "submit %d held past its deadline: %v", i, err)
		if errors.Is(err, client.ErrNotReading) {
			sawNotReading = true
			break
		}
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}
	assert.True(t, sawNotReading, "the queue is bounded")
	start := time.Now()
	assert.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 2*time.Second, "Close releases the writer")
}

func TestClient_ErrNoReply(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})

	// A context that ended before the call: nothing is sent.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Submit(done, client.SubmitRequest{Type: "x"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, client.ErrNoReply)
	_, err = c.SubmitWatch(done, client.SubmitRequest{Type: "x"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, client.ErrNoReply)
	go func() {
		m := sc.expect("stats") // the first frame after those: none was sent
		sc.send("stats", "req", m.Value("req"), "uptime_ms", "1")
	}()
	_, err = c.Stats(context.Background())
	require.NoError(t, err)

	// Sent, then the deadline: the main control may have acted on it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	go sc.expect("submit")
	_, err = c.Submit(ctx, client.SubmitRequest{Type: "x"})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, client.ErrNoReply)
	assert.Equal(t, "submit: context deadline exceeded", err.Error(), "the cause's message")

	// Sent, then the connection is lost.
	errc := make(chan error, 1)
	go func() { _, err := c.Submit(context.Background(), client.SubmitRequest{Type: "x"}); errc <- err }()
	sc.expect("submit")
	sc.Net.Close()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, client.ErrConnectionLost)
		assert.ErrorIs(t, err, client.ErrNoReply)
	case <-time.After(waitFor):
		t.Fatal("Submit did not return when the connection was lost")
	}
}
