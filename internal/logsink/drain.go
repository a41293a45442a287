package logsink

// drain writes the buffer out as soon as Write signals, not on a timer.
// So a reader of the log sees a line as soon as the writer takes it.
// The reader may be a test or an operator tailing it. Whatever accumulated
// while the writer was busy goes in one Write.
func (s *Sink) drain() {
	defer close(s.done)
	var spare []byte
	// unreported counts records lost whose notice the writer has not
	// taken yet. The writer refused the batch, or the notice itself.
	var unreported uint64
	for {
		stopping := false
		select {
		case <-s.wake:
		case <-s.stop:
			stopping = true // Write takes nothing more, so this take is the last
		}
		s.mu.Lock()
		batch, records, gap := s.buf, s.records, s.gap
		s.buf, s.records, s.gap = spare[:0], 0, 0
		s.mu.Unlock()

		if len(batch) > 0 {
			// An earlier gap the writer refused to hear of comes before
			// this batch.
			unreported = s.report(unreported)
			if !s.write(batch) {
				s.dropped.Add(records)
				unreported += records
			}
		}
		// The gap followed every record of the batch (see Write).
		unreported = s.report(unreported + gap)
		spare = batch
		if stopping {
			return
		}
	}
}

// report writes the notice of n lost records, if any, and returns how
// many are still unreported.
func (s *Sink) report(n uint64) uint64 {
	if n == 0 || s.write(s.notice(n)) {
		return 0
	}
	return n
}

// write reports whether the writer took all of b. A writer that fails is
// not retried. The drain goes back to waiting for the next record. So a
// broken writer costs one Write per batch, never a spin.
func (s *Sink) write(b []byte) bool {
	n, err := s.w.Write(b)
	return err == nil && n == len(b)
}
