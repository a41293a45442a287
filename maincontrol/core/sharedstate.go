package core

// The shared state's size cap. Wire v1 has no way to delete a key. The
// shared state is durable, and every snapshot rewrites it whole. Without a
// bound, one executor could grow it until the main control no longer fits
// in memory, at every start after. Growth past the cap is a bad state
// change (spec section 4, illegal_value). The result is refused whole, and
// the task fails, naming the first key that takes the size over.

// DefaultMaxStateBytes is the shared state's default size cap.
const DefaultMaxStateBytes = 64 << 20

const (
	// StateKeyOverhead is what each key counts besides its name and value.
	// So a flood of empty values is bounded too. A Go map entry with two
	// string headers costs about that much.
	StateKeyOverhead = 64
	// StateValueFloor is the least a value counts, the longest int64 in text
	// ("-9223372036854775808"). An add to an existing integer key then never
	// grows the size, so counters keep counting at the cap.
	StateValueFloor = 20
)

// stateEntryBytes is what one key counts toward the cap.
func stateEntryBytes(name, value string) int64 {
	return int64(len(name)) + int64(max(len(value), StateValueFloor)) + StateKeyOverhead
}

// countStateBytes adds up the whole shared state.
func (c *Core) countStateBytes() int64 {
	var n int64
	for k, v := range c.state {
		n += stateEntryBytes(k, v)
	}
	return n
}

// StateBytes is the shared state's size as the cap counts it.
func (c *Core) StateBytes() int64 { return c.stateBytes }

// stateLimit is the size a result's state changes may not take the shared
// state past. It is the cap, or the size already held when that is larger,
// after a cap was lowered across a restart. So what was accepted stays,
// and only new growth is refused. A negative limit is none.
func (c *Core) stateLimit() int64 {
	if c.cfg.MaxStateBytes < 0 {
		return -1
	}
	return max(int64(c.cfg.MaxStateBytes), c.stateBytes)
}

// recountState sets the size from the state recovery loaded, and warns
// when it is past the cap. The log's records are replayed without a size
// check, as they were accepted once.
func (c *Core) recountState() {
	c.stateBytes = c.countStateBytes()
	if limit := c.cfg.MaxStateBytes; limit >= 0 && c.stateBytes > int64(limit) {
		c.log.Warn("shared state is larger than --max-state-bytes: it is kept, and results that grow it are refused (illegal_value)",
			"state_bytes", c.stateBytes, "max_state_bytes", limit, "keys", len(c.state))
	}
}
