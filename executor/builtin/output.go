package builtin

import (
	"strings"
	"sync"
)

// cappedBuffer keeps the first max bytes written to it and counts the
// rest. So a chatty program never blocks on a full pipe nor fills the
// executor's memory. It is safe for concurrent use.
type cappedBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.max - len(c.buf); room < n {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf = append(c.buf, p...)
	return n, nil // all of it "written", so that the copy goes on draining the pipe
}

// text returns what was kept as valid UTF-8, and whether output was
// dropped. Invalid bytes become U+FFFD, including a sequence cut by the cap.
func (c *cappedBuffer) text() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(string(c.buf), "\uFFFD"), c.truncated
}
