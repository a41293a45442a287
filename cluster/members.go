package cluster

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// changeTimeout bounds a membership change's wait to enter Raft.
const changeTimeout = 10 * time.Second

// ErrNoMember is a removal or transfer naming no member.
var ErrNoMember = errors.New("no such member")

// ErrRenamed is a member started under an id its raft state does not
// hold, at a raft address held under another id.
var ErrRenamed = errors.New("cluster member renamed")

// MemberStatus is one member as the configuration and this member see it.
type MemberStatus struct {
	Member
	// MatchIndex and Lag are known on the leader only (Known).
	MatchIndex, Lag uint64
	Known           bool
}

// Status is what cluster_status shows.
type Status struct {
	ID, Role, Leader          string
	Term                      uint64
	CommitIndex, AppliedIndex uint64
	Members                   []MemberStatus
}

// Status reads Raft's view. Match indexes come from match, when set.
func (n *Node) Status(match func(id string) (uint64, bool)) (Status, error) {
	st := Status{ID: n.cfg.ID, Leader: n.Leader(), Term: n.r.CurrentTerm(),
		CommitIndex: n.r.CommitIndex(), AppliedIndex: n.r.AppliedIndex()}
	switch n.r.State() {
	case raft.Leader:
		st.Role = "leader"
	case raft.Candidate:
		st.Role = "candidate"
	default:
		st.Role = "follower"
	}
	f := n.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return st, err
	}
	for _, s := range f.Configuration().Servers {
		m := MemberStatus{Member: Member{ID: string(s.ID), Raft: string(s.Address), Voter: s.Suffrage == raft.Voter}}
		if st.Role == "leader" {
			if string(s.ID) == n.cfg.ID {
				m.MatchIndex, m.Known = n.r.LastIndex(), true
			} else if match != nil {
				m.MatchIndex, m.Known = match(string(s.ID))
			}
			if m.Known && m.MatchIndex < st.CommitIndex {
				m.Lag = st.CommitIndex - m.MatchIndex
			}
		}
		st.Members = append(st.Members, m)
	}
	return st, nil
}

// Add adds a member, or changes its address and vote. It waits until the
// new configuration is committed.
func (n *Node) Add(m Member) error {
	if m.Voter {
		return n.r.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.Raft), 0, changeTimeout).Error()
	}
	return n.r.AddNonvoter(raft.ServerID(m.ID), raft.ServerAddress(m.Raft), 0, changeTimeout).Error()
}

// Remove removes a member and waits until that is committed.
func (n *Node) Remove(id string) error {
	if _, ok, err := n.member(id); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%w %s", ErrNoMember, id)
		}
		return err
	}
	return n.r.RemoveServer(raft.ServerID(id), 0, changeTimeout).Error()
}

// Transfer hands the leadership to the voter id, or to the most
// up-to-date voter when id is "".
func (n *Node) Transfer(id string) error {
	if id == "" {
		return n.r.LeadershipTransfer().Error()
	}
	m, ok, err := n.member(id)
	if err != nil {
		return err
	}
	if !ok || !m.Voter {
		return fmt.Errorf("%w %s among the voters", ErrNoMember, id)
	}
	return n.r.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(m.Raft)).Error()
}

func (n *Node) member(id string) (Member, bool, error) {
	f := n.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return Member{}, false, err
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return Member{ID: id, Raft: string(s.Address), Voter: s.Suffrage == raft.Voter}, true, nil
		}
	}
	return Member{}, false, nil
}

// Committed reads this member's committed state afresh, for a leader that
// stepped down: the newest Raft snapshot into load, then every batch
// after it up to index upto into apply. load begins each attempt, with
// nil for no snapshot: the state must start empty there. It returns the
// last index of a command the snapshot holds. A snapshot taken meanwhile
// may compact the entries an attempt needs; it then starts over.
func (n *Node) Committed(upto uint64, load func(r io.Reader) (uint64, error), apply func(index uint64, b Batch) error) error {
	for attempt := 0; ; attempt++ {
		err := n.committed(upto, load, apply)
		if !errors.Is(err, raft.ErrLogNotFound) || attempt == 2 {
			return err
		}
	}
}

func (n *Node) committed(upto uint64, load func(r io.Reader) (uint64, error), apply func(index uint64, b Batch) error) error {
	metas, err := n.snaps.List()
	if err != nil {
		return fmt.Errorf("cannot list raft snapshots: %w", err)
	}
	from, err := n.loadNewest(metas, upto, load)
	if err != nil {
		return err
	}
	var l raft.Log
	for i := from; i <= upto; i++ {
		if err := n.stores.Log.GetLog(i, &l); err != nil {
			return fmt.Errorf("raft entry %d: %w", i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		b, err := DecodeBatch(l.Data)
		if err == nil {
			err = apply(i, b)
		}
		if err != nil {
			return fmt.Errorf("raft entry %d: %w", i, err)
		}
	}
	return nil
}

// loadNewest loads the newest snapshot, unless it holds a command after
// upto, and returns the index to replay from. Its Raft index may count
// barrier and configuration entries past its last command, so the command
// index it holds decides: the log before it may be compacted.
func (n *Node) loadNewest(metas []*raft.SnapshotMeta, upto uint64, load func(r io.Reader) (uint64, error)) (uint64, error) {
	if len(metas) > 0 {
		_, rc, err := n.snaps.Open(metas[0].ID)
		if err != nil {
			return 0, fmt.Errorf("cannot open raft snapshot %s: %w", metas[0].ID, err)
		}
		held, err := load(rc)
		_ = rc.Close()
		if err != nil {
			return 0, fmt.Errorf("raft snapshot %s: %w", metas[0].ID, err)
		}
		if held <= upto {
			return metas[0].Index + 1, nil
		}
	}
	// No snapshot, or one ahead of upto: the whole log, from empty.
	if _, err := load(nil); err != nil {
		return 0, err
	}
	return 1, nil
}
