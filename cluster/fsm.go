package cluster

import (
	"io"
	"log/slog"

	"github.com/hashicorp/raft"
)

// fsm adapts an App to raft.FSM.
type fsm struct {
	app App
	log *slog.Logger
}

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	b, err := DecodeBatch(l.Data)
	if err == nil {
		err = f.app.Apply(l.Index, b)
	}
	if err != nil {
		// The members' states may now differ: say so loudly.
		f.log.Error("cannot apply a committed raft entry", "index", l.Index, "term", l.Term, "err", err)
	}
	return err
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	write, err := f.app.Snapshot()
	if err != nil {
		return nil, err
	}
	return fsmSnapshot(write), nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return f.app.Restore(rc)
}

type fsmSnapshot func(w io.Writer) error

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s fsmSnapshot) Release() {}
