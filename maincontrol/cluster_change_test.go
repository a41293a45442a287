package maincontrol

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/wire"
)

// A change that lost the leadership while under way may have taken
// effect: the client must look, not send it again as if refused.
func TestChangeError(t *testing.T) {
	code, msg := changeError(fmt.Errorf("add: %w", raft.ErrLeadershipLost))
	assert.Equal(t, wire.CodeUnavailable, code)
	assert.Contains(t, msg, "may have taken effect")
	assert.Contains(t, msg, "cluster_status")

	code, _ = changeError(raft.ErrNotLeader)
	assert.Equal(t, wire.CodeNotLeader, code, "not the leader: nothing changed")
	code, _ = changeError(fmt.Errorf("%w x", cluster.ErrNoMember))
	assert.Equal(t, wire.CodeBadRequest, code)
	code, msg = changeError(raft.ErrLeadershipTransferInProgress)
	assert.Equal(t, wire.CodeUnavailable, code)
	assert.Contains(t, msg, raft.ErrLeadershipTransferInProgress.Error())
	code, _ = changeError(nil)
	assert.Empty(t, code)
}
