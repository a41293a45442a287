package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
)

// A page with more=true and no type leaves no name to page after:
// TypeListAll says the list is cut short rather than end in silence.
func TestTypeListAll_MoreWithNoTypeIsAnError(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		m := sc.expect("type_list")
		sc.send("type_page", "req", m.Value("req"), "count", "1", "more", "true", "type.0", "a")
		m = sc.expect("type_list")
		sc.send("type_page", "req", m.Value("req"), "count", "0", "more", "true", "skipped", "1")
	}()
	all, err := c.TypeListAll(func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), waitFor)
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "incomplete")
	require.Len(t, all, 1)
	assert.Equal(t, "a", all[0].Name)
}
