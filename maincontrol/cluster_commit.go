package maincontrol

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
)

// committedCore builds a core from the committed state up to index: the
// latest Raft snapshot, then the committed entries after it. newCore gives
// an empty core; each attempt of Committed starts from a new one.
func committedCore(node *cluster.Node, index uint64, newCore func() (*core.Core, error)) (*core.Core, error) {
	var c *core.Core
	err := node.Committed(index, func(r io.Reader) (uint64, error) {
		fresh, err := newCore()
		if err != nil {
			return 0, err
		}
		c = fresh
		if r == nil {
			return 0, nil
		}
		return loadStream(c, r)
	}, func(_ uint64, b cluster.Batch) error { return replayBatch(c, b) })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// writeCommitted writes the committed state at index as a Raft snapshot.
// It runs on Raft's persist goroutine, when the leader's core is ahead.
// The shadow core it builds costs a second copy of the state meanwhile.
// Raft compacts the log only after the snapshot, so the entries are there.
func (cm *clusterMode) writeCommitted(node *cluster.Node, index uint64, w io.Writer) error {
	shadow, err := committedCore(node, index, cm.s.shadowCore)
	if err != nil {
		return fmt.Errorf("cannot rebuild the committed state at raft index %d for a snapshot: %w", index, err)
	}
	snap := shadow.Freeze()
	return snapshot.WriteStream(w, index, func(sw *snapshot.SnapshotWriter) error { return snap.WriteTo(sw.Add) })
}

// shadowCore makes an empty core with no effects on the server: no
// connections, no metrics, no logs. It only replays, then is dropped.
func (s *Server) shadowCore() (*core.Core, error) {
	cfg := s.cfg.Core
	cfg.Observer = nil // the live core already counted these changes
	cfg.Logger = slog.New(slog.DiscardHandler)
	return core.New(cfg, &discardEffects{})
}

// discardEffects is the effects of a core that nobody is connected to.
// Replay makes no records and sends nothing; this keeps it so if it did.
type discardEffects struct{ lsn uint64 }

func (d *discardEffects) Record([]byte) uint64 {
	d.lsn++
	return d.lsn
}
func (*discardEffects) Send(core.PeerID, []byte, core.Wait)  {}
func (*discardEffects) SendTask(core.PeerID, []byte, uint64) {}
func (*discardEffects) Close(core.PeerID)                    {}
