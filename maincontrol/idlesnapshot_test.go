package maincontrol_test

import (
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol"
)

// A snapshot written while nothing changes tells the daemon, so that it
// can drop the pages of its binary that the snapshot used. Without the
// call they stayed mapped until the next minute's release.
func TestServer_IdleSnapshotTellsTheDaemon(t *testing.T) {
	idle := make(chan struct{}, 1)
	addr, _ := runUntil(t, maincontrol.Config{DataDir: t.TempDir(), SnapshotInterval: 50 * time.Millisecond,
		OnIdleSnapshot: func() {
			select {
			case idle <- struct{}{}:
			default:
			}
		}})
	cl := clientPeer(t, addr)
	cl.send("submit", "req", "s", "task_type", "t")
	cl.expect("submitted")
	select {
	case <-idle:
	case <-time.After(patience.Scale(30 * time.Second)):
		t.Fatal("no idle snapshot reported")
	}
}
