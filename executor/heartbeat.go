package executor

import "github.com/apollo11/apollo11/wire"

// maxTokenLen is the longest `task_id.version` a heartbeat lists. That is
// two numbers of up to 20 digits and a dot.
const maxTokenLen = 20 + 1 + 20

// heartbeatSlots is how many dispatches a heartbeat can list within
// maxFrame when every number has 20 digits. Wire v1 has no partial
// `running=` list, as a dispatch left out twice is cancelled. So this is
// the most slots the executor registers on a connection with that
// max_frame. It is at least 1, as the protocol has no fewer.
func heartbeatSlots(maxFrame int) int {
	fixed := len("type=heartbeat\nseq=") + 20 + len("\nrunning=")
	// n tokens take n*maxTokenLen bytes and n-1 commas.
	return max(1, min(MaxSlots, (maxFrame-fixed+1)/(maxTokenLen+1)))
}

// sendHeartbeat sends `heartbeat` with the dispatches still executing,
// except those the main control cancelled. The slots registered keep the
// list within max_frame. The dispatches of an earlier connection with a
// larger max_frame may not fit. Those are left out and logged, as a frame
// too large would cost the connection. The main control cancels them
// after two lists.
func (e *Executor) sendHeartbeat(s *session, seq uint64) {
	b := wire.Begin(nil, wire.KindHeartbeat)
	b.Uint("seq", seq)
	room := s.maxFrame - b.Len() - len("\nrunning=")
	e.mu.Lock()
	items := make([]string, 0, len(e.runs))
	left := 0
	for _, tok := range sortedTokens(e.runs) {
		if e.runs[tok].cancelled {
			continue
		}
		item := tok.String()
		need := len(item)
		if len(items) > 0 {
			need++ // the comma
		}
		if need > room {
			left++
			continue
		}
		room -= need
		items = append(items, item)
	}
	e.mu.Unlock()
	if left > 0 {
		s.log.Warn("heartbeat leaves out running dispatches that do not fit max_frame; the main control will cancel them",
			"listed", len(items), "left_out", left, "max_frame", s.maxFrame)
	}
	b.List("running", items)
	frame, err := b.Finish()
	if err != nil {
		s.log.Error("cannot encode heartbeat", "err", err)
		return
	}
	_ = s.send(frame)
}
