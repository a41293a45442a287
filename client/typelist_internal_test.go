package client

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// A reader ignores columns it does not know (protocol 8.7), keeping them
// in Extra, and refuses a page whose rows do not match its count.
func TestTypeList_ParsePage(t *testing.T) {
	m := wire.NewMessage("type_page")
	for _, kv := range [][2]string{{"count", "1"}, {"more", "false"}, {"skipped", "2"},
		{"type.0", "x,y"}, {"type.0.pending", "3"}, {"type.0.running", "1"}, {"type.0.paused", "true"},
		{"type.0.executors", "2"}, {"type.0.slots", "8"}, {"type.0.limit", "5"}} {
		m.Set(kv[0], kv[1])
	}
	page, err := parseTypePage(m)
	require.NoError(t, err)
	assert.Equal(t, TypePage{Types: []TypeInfo{{Name: "x,y", Pending: 3, Running: 1, Paused: true, Executors: 2, Slots: 8,
		Extra: map[string]string{"limit": "5"}}}, Skipped: 2}, page)

	m.Set("count", "2")
	_, err = parseTypePage(m)
	assert.ErrorContains(t, err, "no type.1")
	m.Set("count", "1")
	m.Set("type.0.pending", "x")
	_, err = parseTypePage(m)
	assert.Error(t, err)
	m.Set("type.0.pending", "1")
	m.Set("type.7", "z")
	_, err = parseTypePage(m)
	assert.ErrorContains(t, err, "type.7")
}
