package core

import (
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// clusterRequest answers the messages of the cluster group (protocol
// section 8.13). A main control that is no cluster member does not
// speak the group, so they are unknown_type there (section 8).
func (c *Core) clusterRequest(p *peer, m *wire.Message, req string) {
	c.sendError(p, req, wire.CodeUnknownType, "unknown type "+strconv.Quote(clipText(m.Type()))+
		": this main control is not a cluster member")
}
