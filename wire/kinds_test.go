package wire

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKinds_Senders(t *testing.T) {
	assert.True(t, KindSubmit.SentBy(RoleClient))
	assert.False(t, KindSubmit.SentBy(RoleExecutor))
	assert.True(t, KindStateGet.SentBy(RoleClient) && KindStateGet.SentBy(RoleExecutor))
	assert.True(t, KindResultAck.SentBy(RoleMain))
	assert.False(t, KindResultAck.SentBy(RoleClient|RoleExecutor))
	assert.Equal(t, RoleClient|RoleExecutor|RoleMain, KindError.Senders())
	assert.False(t, Kind("nosuch").Known())
	assert.False(t, Kind("").Known())
	assert.Zero(t, Kind("nosuch").Senders())
}

func TestKinds_ListedOnceSorted(t *testing.T) {
	ks := Kinds()
	assert.True(t, slices.IsSorted(ks))
	assert.Contains(t, ks, KindHello)
	for _, k := range ks {
		assert.True(t, k.Known(), "%s", k)
		assert.NotZero(t, k.Senders()&(RoleClient|RoleExecutor|RoleMain), "%s has no sender", k)
	}
}

func TestMessage_Kind(t *testing.T) {
	assert.Equal(t, KindPong, NewMessage(KindPong).Kind())
	assert.Equal(t, Kind(""), (&Message{}).Kind())
}
