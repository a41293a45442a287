package dashboard

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
)

// Every action is logged at Info with the HTTP peer, a short hash of the
// session and what it touched: the main control sees only "dashboard".
func TestDashboard_ActionLog(t *testing.T) {
	d, act, _ := newTestDashboardAdmin(t, []byte("tok"), []byte("adm"))
	var logs syncbuf.Buffer
	d.log = slog.New(slog.NewTextHandler(&logs, nil))

	w := do(d, "POST", "/login", farPeer, url.Values{"token": {"tok"}, "admin_token": {"adm"}})
	require.Equal(t, http.StatusSeeOther, w.Code)
	c := sessionOf(t, w)
	w = do(d, "GET", "/tasks/3", farPeer, nil, c)
	csrf := csrfOf(t, w)
	ss := d.session(withCookie(c))
	require.NotNil(t, ss)
	tag := sessionTag(ss)
	assert.Len(t, tag, 12)
	assert.NotContains(t, c.Value, tag, "the tag is not the cookie's id")

	w = do(d, "POST", "/tasks/3/requeue", farPeer, url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, w.Code)
	w = do(d, "POST", "/types/pause", farPeer, url.Values{"csrf": {csrf}, "type": {"fail"}}, c)
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, []string{"requeue 3 (dashboard " + farPeer + ")", "pause fail"}, act.otherCalls())

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var got []string
	for _, l := range lines {
		if strings.Contains(l, `msg="dashboard action"`) {
			got = append(got, l)
		}
	}
	require.Len(t, got, 2, logs.String())
	for _, want := range []string{"level=INFO", "action=requeue", "remote=" + farPeer, "session=" + tag, "task_id=3"} {
		assert.Contains(t, got[0], want)
	}
	for _, want := range []string{"action=pause", "remote=" + farPeer, "session=" + tag, "task_type=fail"} {
		assert.Contains(t, got[1], want)
	}
}
