package addrlist_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/addrlist"
)

func TestList(t *testing.T) {
	l := addrlist.New("", "a:1", "b:2", "a:1", "c:3")
	assert.Equal(t, []string{"a:1", "b:2", "c:3"}, l.All())
	assert.Equal(t, "a:1,b:2,c:3", l.String())
	assert.Equal(t, "b:2", l.After("a:1"))
	assert.Equal(t, "a:1", l.After("c:3"), "wraps")
	assert.Equal(t, "a:1", l.After("x:9"), "unknown starts at the first")
	assert.Equal(t, []string{"b:2", "c:3", "a:1"}, l.From("b:2"))
	assert.Equal(t, []string{"a:1", "b:2", "c:3"}, l.From("x:9"))
	assert.Equal(t, addrlist.Follow, l.Judge("c:3"))
	assert.Equal(t, addrlist.NoHint, l.Judge(""))
	assert.Equal(t, addrlist.Outside, l.Judge("c:33"), "matched exactly, never by prefix")
	assert.Equal(t, addrlist.Outside, l.Judge("evil:1"))
	assert.Empty(t, addrlist.New().From("a:1"))
	assert.Empty(t, addrlist.New().First())
}

func TestParse(t *testing.T) {
	got, err := addrlist.Parse(" a:1, b:2 ,c:3")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:1", "b:2", "c:3"}, got)
	got, err = addrlist.Parse("a:1")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:1"}, got)
	for _, bad := range []string{"", " ", "a:1,", ",a:1", "a:1,,b:2", "a:1,a:1"} {
		_, err := addrlist.Parse(bad)
		assert.Error(t, err, "%q", bad)
	}
}
