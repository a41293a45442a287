package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// ClusterStatus is a cluster member's `cluster_status_ok` (protocol
// section 8.13).
type ClusterStatus struct {
	ID           string          `json:"id"`               // the member that answered
	Role         string          `json:"role"`             // leader, follower or candidate
	Leader       string          `json:"leader,omitempty"` // "" when the member knows none
	Term         uint64          `json:"term"`
	CommitIndex  uint64          `json:"commit_index"`
	AppliedIndex uint64          `json:"applied_index"`
	Members      []ClusterMember `json:"members"`
}

// ClusterMember is one member of the configuration. MatchIndex and Lag
// come from the leader only.
type ClusterMember struct {
	ID         string  `json:"id"`
	Raft       string  `json:"raft"`
	Voter      bool    `json:"voter"`
	MatchIndex *uint64 `json:"match_index,omitempty"`
	Lag        *uint64 `json:"lag,omitempty"` // entries behind the commit index
}

// ClusterStatus asks the connected member about the cluster. Every member
// answers it, the followers too. Use Options.AcceptFollower to ask a
// cluster that has no leader.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	m, err := c.roundTrip(ctx, wire.KindClusterStatus, wire.KindClusterStatusOK, idempotent, nil)
	if err != nil {
		return ClusterStatus{}, err
	}
	st, err := parseClusterStatus(m)
	if err != nil {
		return ClusterStatus{}, fmt.Errorf("cluster_status: bad cluster_status_ok: %w", err)
	}
	return st, nil
}

func parseClusterStatus(m *wire.Message) (ClusterStatus, error) {
	st := ClusterStatus{ID: strings.Clone(m.Value("id")), Role: strings.Clone(m.Value("role")),
		Leader: strings.Clone(m.Value("leader"))}
	var err error
	for k, dst := range map[string]*uint64{"term": &st.Term, "commit_index": &st.CommitIndex, "applied_index": &st.AppliedIndex} {
		if *dst, err = m.Uint(k); err != nil {
			return st, err
		}
	}
	count, err := m.Uint("count")
	if err != nil {
		return st, err
	}
	for i := range count {
		p := "member." + strconv.FormatUint(i, 10) + "."
		id, ok := m.Get(p + "id")
		if !ok {
			// count is the server's word; the frame bounds what follows.
			return st, fmt.Errorf("count=%d but no %sid", count, p)
		}
		mem := ClusterMember{ID: strings.Clone(id), Raft: strings.Clone(m.Value(p + "raft"))}
		if mem.Voter, err = m.BoolOr(p+"voter", false); err != nil {
			return st, err
		}
		for k, dst := range map[string]**uint64{"match_index": &mem.MatchIndex, "lag": &mem.Lag} {
			if _, ok := m.Get(p + k); ok {
				n, err := m.Uint(p + k)
				if err != nil {
					return st, err
				}
				*dst = &n
			}
		}
		st.Members = append(st.Members, mem)
	}
	return st, nil
}

// ClusterAdd adds a member, or changes a member's raft address and
// voting (`cluster_add`). id is its client address, raft its Raft one. It
// returns once the new configuration is committed. It needs the admin
// group and the leader. It is never sent twice: a second one could undo
// another admin's change made in between. So a lost reply leaves its
// outcome unknown (ErrOutcomeUnknown): ask ClusterStatus.
func (c *Client) ClusterAdd(ctx context.Context, id, raft string, voter bool) error {
	_, err := c.roundTrip(ctx, wire.KindClusterAdd, wire.KindClusterOK, oneShot, func(b *wire.Builder) {
		b.Str("id", id)
		b.Str("raft", raft)
		b.Bool("voter", voter)
	})
	return checkStatus(err)
}

// ClusterRemove removes a member (`cluster_remove`). Removing the leader
// makes it step down after its reply. Sent twice, it would be refused, so
// a lost reply leaves its outcome unknown: ask ClusterStatus.
func (c *Client) ClusterRemove(ctx context.Context, id string) error {
	_, err := c.roundTrip(ctx, wire.KindClusterRemove, wire.KindClusterOK, oneShot, func(b *wire.Builder) { b.Str("id", id) })
	return checkStatus(err)
}

// checkStatus tells the operator where to look after a cluster change
// whose reply was lost.
func checkStatus(err error) error {
	if errors.Is(err, ErrOutcomeUnknown) {
		return fmt.Errorf("%w (check `apollo11 cluster status` before sending it again)", err)
	}
	return err
}

// ClusterTransfer hands the leadership to the voter id, or with "" to the
// most up-to-date one (`cluster_transfer`). The old leader closes its
// connections as it steps down, so the reply may be lost
// (ErrOutcomeUnknown). ClusterStatus then shows the new leader.
func (c *Client) ClusterTransfer(ctx context.Context, id string) error {
	_, err := c.roundTrip(ctx, wire.KindClusterTransfer, wire.KindClusterOK, oneShot, func(b *wire.Builder) {
		if id != "" {
			b.Str("id", id)
		}
	})
	return err
}
