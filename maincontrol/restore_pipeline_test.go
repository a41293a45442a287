package maincontrol_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// A log record the core cannot read, or refuses, stops a restart with an
// error naming it, while far more batches than are read ahead follow it:
// the reading stops and nothing hangs.
func TestRestore_BadRecordStopsTheReading(t *testing.T) {
	for name, bad := range map[string][]byte{
		"undecodable": {0xff},  // no such kind
		"refused":     {15, 1}, // skip_ids back to task id 1
	} {
		t.Run(name, func(t *testing.T) {
			opts := snapshot.Options{Dir: t.TempDir(), Fsync: snapshot.FsyncNever, Logger: slog.New(slog.DiscardHandler)}
			st, err := snapshot.Open(opts)
			require.NoError(t, err)
			c := restoreBenchCore(t, logEffects{st})
			_, err = maincontrol.Restore(st, c, maincontrol.RestoreOptions{Serve: true})
			require.NoError(t, err)
			st.Start(func(uint64) {}, func(error) {})
			const peer = core.PeerID(1)
			c.Open(peer)
			c.Handle(peer, wire.NewMessage("hello"))
			submit := func(i int) {
				m := wire.NewMessage(wire.KindSubmit)
				m.Set("req", "r")
				m.Set("task_type", "t")
				m.Set("arg.i", strconv.Itoa(i))
				c.Handle(peer, m)
			}
			for i := range 2000 {
				submit(i)
			}
			lsn := st.Append(bad)
			for i := range 20000 {
				submit(i)
			}
			require.NoError(t, st.Close())

			st, err = snapshot.Open(opts)
			require.NoError(t, err)
			defer st.Close()
			c = restoreBenchCore(t, logEffects{st})
			_, err = maincontrol.Restore(st, c, maincontrol.RestoreOptions{Serve: true})
			require.ErrorIs(t, err, core.ErrCorrupt)
			require.ErrorContains(t, err, fmt.Sprintf("replay of record %d:", lsn))
		})
	}
}
