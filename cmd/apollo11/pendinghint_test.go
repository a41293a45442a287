package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The hint suggests only what `apollo11 executor` can start: its
// built-in types, exec with the flags that allow it, and nothing for a
// type of the user's own (a mistyped --type among them).
func TestStartOne(t *testing.T) {
	for typ, want := range map[string]string{
		"echo":       "`apollo11 executor --types echo` starts one",
		"sleep":      "`apollo11 executor --types sleep` starts one",
		"fail":       "`apollo11 executor --types fail` starts one",
		"exec":       "`apollo11 executor --types exec --allow-exec --exec-allow PROGRAM,...` starts one",
		"nosuchtype": "apollo11 executor runs only echo, sleep, fail and exec: a type of your own needs an executor built with the executor package",
	} {
		assert.Equal(t, want, startOne(typ), typ)
	}
}
