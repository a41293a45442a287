package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrintRequeues(t *testing.T) {
	var b bytes.Buffer
	printRequeues(&b, 0, "")
	assert.Empty(t, b.String())
	printRequeues(&b, 2, "")
	assert.Equal(t, "requeued 2 times\n", b.String(), "no empty reason")
	b.Reset()
	printRequeues(&b, 1, "disk replaced")
	assert.Equal(t, "requeued 1 times; last reason: disk replaced\n", b.String())
}
