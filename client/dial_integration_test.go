package client_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestDial_ContextEndingAtHelloOK dials the real main control with
// deadlines spread around the handshake's length. A Dial that returns no
// error must give a working client even when its ctx ended just after: the
// ctx's watcher used to set a past deadline on the connection it had just
// handed over, and one client in fifty was dead on arrival.
func TestDial_ContextEndingAtHelloOK(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	dialed, dead := 0, 0
	for i := range 400 {
		d := 50*time.Microsecond + time.Duration(i%60)*10*time.Microsecond
		ctx, cancel := context.WithTimeout(context.Background(), d)
		c, err := client.Dial(ctx, addr, client.Options{Logger: quiet()})
		if err != nil {
			cancel()
			continue
		}
		dialed++
		<-ctx.Done()
		cancel()
		if _, err := c.Stats(context.Background()); err != nil {
			dead++
			t.Logf("dial %d (deadline %v): %v", i, d, err)
		}
		c.Close()
	}
	t.Logf("%d of 400 dials made it in time", dialed)
	assert.Zero(t, dead, "clients returned by Dial that could not make a call")
}
