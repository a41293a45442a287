package client

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A search cut off by a 300 ms context ends a little short of 300 ms
// after it began; the error says 300ms, the bound the user gave.
func TestNoLeaderError_WaitedToTenMilliseconds(t *testing.T) {
	e := &noLeaderError{errs: []error{errors.New("a is a candidate")}, waited: 299*time.Millisecond + 400*time.Microsecond}
	assert.Contains(t, e.Error(), "none was elected in 300ms")
	e.waited = 294 * time.Millisecond
	assert.Contains(t, e.Error(), "none was elected in 290ms")
	e.waited = 3 * time.Millisecond
	assert.Contains(t, e.Error(), "none was elected in 3ms")
}
