package dashboard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// fakeSource serves a fixed state, and records the latest Browse.
type fakeSource struct {
	tasks   map[uint64]core.TaskInfo
	history map[uint64][]core.Transition
	mu      sync.Mutex
	last    core.BrowseQuery
}

func (f *fakeSource) Overview() Overview {
	var o Overview
	o.Counts[core.Pending] = len(f.tasks)
	o.Executors = []core.ExecutorInfo{{ID: "ex-1", Types: []string{"echo"}, Slots: 4, Load: 3, Connected: true}}
	return o
}
func (f *fakeSource) Totals() Totals { return Totals{Submitted: uint64(len(f.tasks))} }
func (f *fakeSource) Browse(q core.BrowseQuery) core.BrowsePage {
	f.mu.Lock()
	f.last = q
	f.mu.Unlock()
	var p core.BrowsePage
	if q.Before == 0 {
		p.Next = 1 // as if older tasks followed
	}
	for id := uint64(len(f.tasks)); id >= 1; id-- {
		t := f.tasks[id]
		p.Tasks = append(p.Tasks, core.TaskSummary{ID: t.ID, State: t.State, Type: t.Type, TraceID: t.TraceID})
	}
	return p
}
func (f *fakeSource) Task(id uint64) (core.TaskInfo, bool) { t, ok := f.tasks[id]; return t, ok }
func (f *fakeSource) History(id uint64) []core.Transition  { return f.history[id] }

// fakeActor records the actions it gets.
type fakeActor struct {
	mu        sync.Mutex
	cancelled []uint64
	others    []string // requeue <id>, pause <type>, resume <type>
}

func (a *fakeActor) note(s string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.others = append(a.others, s)
	return nil
}

func (a *fakeActor) Requeue(_ context.Context, id uint64, reason string) error {
	return a.note(fmt.Sprint("requeue ", id, " (", reason, ")"))
}
func (a *fakeActor) Pause(_ context.Context, t string) error  { return a.note("pause " + t) }
func (a *fakeActor) Resume(_ context.Context, t string) error { return a.note("resume " + t) }

func (a *fakeActor) otherCalls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.others...)
}

func (a *fakeActor) Cancel(_ context.Context, id uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancelled = append(a.cancelled, id)
	return nil
}

func (a *fakeActor) calls() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]uint64(nil), a.cancelled...)
}

func newTestDashboard(t *testing.T, token []byte) (*Dashboard, *fakeActor) {
	d, act, _ := newTestDashboardSource(t, token)
	return d, act
}

func newTestDashboardSource(t *testing.T, token []byte) (*Dashboard, *fakeActor, *fakeSource) {
	return newTestDashboardAdmin(t, token, nil)
}

func newTestDashboardAdmin(t *testing.T, token, adminToken []byte) (*Dashboard, *fakeActor, *fakeSource) {
	src := &fakeSource{tasks: map[uint64]core.TaskInfo{
		1: {ID: 1, State: core.Pending, Type: "echo", TraceID: "t1", Args: "arg.msg=a\\eb\\nc"},
		2: {ID: 2, State: core.Succeeded, Type: "echo", TraceID: "t1", Out: "out.echo=hi"},
		3: {ID: 3, State: core.Failed, Type: "fail", TraceID: "t3", Error: "boom"},
	}}
	act := &fakeActor{}
	d := New(Options{Source: src, Actor: act, Token: token, AdminToken: adminToken, ListenHost: "dash.example",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(d.Close)
	return d, act, src
}

const loopPeer, farPeer = "127.0.0.1:40000", "192.0.2.7:40000"

func do(d http.Handler, method, target, remote string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, "http://127.0.0.1:8080"+target, body)
	r.RemoteAddr = remote
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, r)
	return w
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func sessionOf(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", w.Result().Header)
	return nil
}

func csrfOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(w.Body.String())
	require.NotNil(t, m, "no csrf field in page:\n%s", w.Body.String())
	return m[1]
}

// Without a token, pages are open and give a session; a cancel needs
// its CSRF token, the same origin, and a loopback peer.
func TestDashboard_ActionsWithoutToken(t *testing.T) {
	d, act := newTestDashboard(t, nil)
	w := do(d, "GET", "/tasks/1", loopPeer, nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), "a=b\nc", "args are unescaped")
	c := sessionOf(t, w)
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	csrf := csrfOf(t, w)

	w = do(d, "POST", "/tasks/1/cancel", loopPeer, url.Values{"csrf": {"00" + csrf[2:]}}, c)
	assert.Equal(t, http.StatusForbidden, w.Code, "wrong csrf")
	w = do(d, "POST", "/tasks/1/cancel", loopPeer, url.Values{}, c)
	assert.Equal(t, http.StatusForbidden, w.Code, "no csrf")
	w = do(d, "POST", "/tasks/1/cancel", loopPeer, url.Values{"csrf": {csrf}})
	assert.Equal(t, http.StatusForbidden, w.Code, "no session")
	w = do(d, "POST", "/tasks/1/cancel", farPeer, url.Values{"csrf": {csrf}}, c)
	assert.Equal(t, http.StatusForbidden, w.Code, "not loopback")
	assert.Contains(t, w.Body.String(), "only from this host")
	r := httptest.NewRequest("POST", "http://127.0.0.1:8080/tasks/1/cancel", strings.NewReader("csrf="+csrf))
	r.RemoteAddr = loopPeer
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	r.AddCookie(c)
	cw := httptest.NewRecorder()
	d.ServeHTTP(cw, r)
	assert.Equal(t, http.StatusForbidden, cw.Code, "cross-site")
	assert.Empty(t, act.calls(), "no refused request reached the main control")

	w = do(d, "POST", "/tasks/1/cancel", loopPeer, url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	assert.Equal(t, "/tasks/1?done=cancel", w.Header().Get("Location"))
	assert.Equal(t, []uint64{1}, act.calls())

	// A page seen from afar offers no action, and says why.
	w = do(d, "GET", "/tasks/1", farPeer, nil)
	assert.NotContains(t, w.Body.String(), `id="cancel"`)
	assert.Contains(t, w.Body.String(), "only from this host")
}

// With a token, every page needs a login; the cookie is an HMAC-signed
// id, never the token, and a logout ends it.
func TestDashboard_LoginWithToken(t *testing.T) {
	token := []byte("s3cret-token")
	d, act := newTestDashboard(t, token)
	for _, p := range []string{"/", "/tasks", "/tasks/1", "/runs"} {
		w := do(d, "GET", p, farPeer, nil)
		assert.Equal(t, http.StatusSeeOther, w.Code, p)
		assert.Equal(t, "/login", w.Header().Get("Location"), p)
	}
	w := do(d, "POST", "/login", farPeer, url.Values{"token": {"wrong"}})
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Empty(t, w.Result().Cookies())
	w = do(d, "POST", "/login", farPeer, url.Values{"token": {string(token) + "x"}})
	assert.Equal(t, http.StatusUnauthorized, w.Code, "a longer token is wrong too")

	w = do(d, "POST", "/login", farPeer, url.Values{"token": {string(token)}})
	require.Equal(t, http.StatusSeeOther, w.Code)
	c := sessionOf(t, w)
	assert.NotContains(t, c.Value, string(token))
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)

	// A forged cookie (another id, or a bad MAC) is no session.
	forged := *c
	forged.Value = strings.Repeat("0", 32) + c.Value[32:]
	assert.Equal(t, http.StatusSeeOther, do(d, "GET", "/", farPeer, nil, &forged).Code)

	w = do(d, "GET", "/tasks/1", farPeer, nil, c)
	require.Equal(t, http.StatusOK, w.Code)
	csrf := csrfOf(t, w)
	w = do(d, "POST", "/tasks/1/cancel", farPeer, url.Values{"csrf": {csrf}}, c)
	assert.Equal(t, http.StatusSeeOther, w.Code, "a logged-in session acts from afar")
	assert.Equal(t, []uint64{1}, act.calls())

	w = do(d, "POST", "/logout", farPeer, url.Values{"csrf": {csrf}}, c)
	assert.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, http.StatusSeeOther, do(d, "GET", "/", farPeer, nil, c).Code, "logged out")

	// Any Host is served with a token: a rebound name cannot log in.
	r := httptest.NewRequest("GET", "http://dash.other:8080/login", nil)
	rw := httptest.NewRecorder()
	d.ServeHTTP(rw, r)
	assert.Equal(t, http.StatusOK, rw.Code)
}

// With an admin token, a login proves it only when its admin field
// matches; a wrong one refuses the whole login.
func TestDashboard_AdminLogin(t *testing.T) {
	d, _, _ := newTestDashboardAdmin(t, []byte("tok"), []byte("adm"))
	w := do(d, "GET", "/login", farPeer, nil)
	assert.Contains(t, w.Body.String(), `name="token"`)
	assert.Contains(t, w.Body.String(), `name="admin_token"`)
	for _, f := range []url.Values{
		{"token": {"tok"}, "admin_token": {"wrong"}},
		{"token": {"wrong"}, "admin_token": {"adm"}},
		{"token": {"adm"}},
	} {
		assert.Equal(t, http.StatusUnauthorized, do(d, "POST", "/login", farPeer, f).Code, "%v", f)
	}
	w = do(d, "POST", "/login", farPeer, url.Values{"token": {"tok"}})
	require.Equal(t, http.StatusSeeOther, w.Code)
	ss := d.session(withCookie(sessionOf(t, w)))
	require.NotNil(t, ss)
	assert.True(t, ss.authed)
	assert.False(t, ss.admin)
	w = do(d, "GET", "/", farPeer, nil, sessionOf(t, w))
	assert.Contains(t, w.Body.String(), "Log in as admin")

	w = do(d, "POST", "/login", farPeer, url.Values{"token": {"tok"}, "admin_token": {"adm"}})
	require.Equal(t, http.StatusSeeOther, w.Code)
	ss = d.session(withCookie(sessionOf(t, w)))
	require.NotNil(t, ss)
	assert.True(t, ss.admin)

	// Without a shared token the form asks for the admin token alone.
	d, _, _ = newTestDashboardAdmin(t, nil, []byte("adm"))
	w = do(d, "GET", "/login", loopPeer, nil)
	assert.NotContains(t, w.Body.String(), `name="token"`)
	assert.Equal(t, http.StatusUnauthorized, do(d, "POST", "/login", loopPeer, url.Values{}).Code)
	w = do(d, "POST", "/login", loopPeer, url.Values{"admin_token": {"adm"}})
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.True(t, d.session(withCookie(sessionOf(t, w))).admin)
}

func withCookie(c *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(c)
	return r
}

// Requeue, pause and resume need a session that proved the admin token
// when the main control has one; cancel needs only the login.
func TestDashboard_AdminActions(t *testing.T) {
	d, act, _ := newTestDashboardAdmin(t, []byte("tok"), []byte("adm"))
	login := func(f url.Values) (*http.Cookie, string) {
		w := do(d, "POST", "/login", farPeer, f)
		require.Equal(t, http.StatusSeeOther, w.Code)
		c := sessionOf(t, w)
		w = do(d, "GET", "/tasks/3", farPeer, nil, c)
		require.Equal(t, http.StatusOK, w.Code)
		return c, w.Body.String()
	}
	plain, page := login(url.Values{"token": {"tok"}})
	assert.NotContains(t, page, `id="requeue"`)
	assert.Contains(t, page, "admin token to requeue")
	csrf := csrfRE.FindStringSubmatch(page)[1]
	for _, a := range []struct{ path, typ string }{{"/tasks/3/requeue", ""}, {"/types/pause", "fail"}, {"/types/resume", "fail"}} {
		w := do(d, "POST", a.path, farPeer, url.Values{"csrf": {csrf}, "type": {a.typ}}, plain)
		assert.Equal(t, http.StatusForbidden, w.Code, a.path)
	}
	assert.Empty(t, act.otherCalls())

	admin, page := login(url.Values{"token": {"tok"}, "admin_token": {"adm"}})
	assert.Contains(t, page, `id="requeue"`)
	csrf = csrfRE.FindStringSubmatch(page)[1]
	w := do(d, "POST", "/tasks/3/requeue", farPeer, url.Values{"csrf": {csrf}}, admin)
	assert.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/tasks/3?done=requeue", w.Header().Get("Location"))
	w = do(d, "POST", "/types/pause", farPeer, url.Values{"csrf": {csrf}, "type": {"fail"}}, admin)
	assert.Equal(t, http.StatusSeeOther, w.Code)
	w = do(d, "POST", "/types/resume", farPeer, url.Values{"csrf": {csrf}, "type": {"fail"}}, admin)
	assert.Equal(t, http.StatusSeeOther, w.Code)
	w = do(d, "POST", "/types/pause", farPeer, url.Values{"csrf": {csrf}, "type": {""}}, admin)
	assert.Equal(t, http.StatusBadRequest, w.Code, "an empty type")
	assert.Equal(t, []string{"requeue 3 (dashboard " + farPeer + ")", "pause fail", "resume fail"}, act.otherCalls())

	// Without an admin token, a logged-in session may take them all.
	d2, act2, _ := newTestDashboardAdmin(t, []byte("tok"), nil)
	w = do(d2, "POST", "/login", farPeer, url.Values{"token": {"tok"}})
	c := sessionOf(t, w)
	w = do(d2, "GET", "/", farPeer, nil, c)
	assert.Contains(t, w.Body.String(), `id="pause"`)
	csrf = csrfRE.FindStringSubmatch(w.Body.String())[1]
	w = do(d2, "POST", "/types/pause", farPeer, url.Values{"csrf": {csrf}, "type": {"echo"}}, c)
	assert.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, []string{"pause echo"}, act2.otherCalls())
}

// Without a token, a Host that is not an IP, localhost or the listen
// host is refused: a DNS-rebinding page gets nothing.
func TestDashboard_HostCheckWithoutToken(t *testing.T) {
	d, _ := newTestDashboard(t, nil)
	for host, want := range map[string]int{
		"127.0.0.1:8080": 200, "[::1]:8080": 200, "localhost:8080": 200, "dash.example:8080": 200,
		"DASH.EXAMPLE.": 200, "evil.example:8080": 421, "localhost.evil.example": 421, "": 421,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		r.RemoteAddr = loopPeer
		w := httptest.NewRecorder()
		d.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, "Host %q", host)
	}
}

// Bodies, filters and ids are bounded or refused with a clear status.
func TestDashboard_BadInput(t *testing.T) {
	d, act := newTestDashboard(t, nil)
	w := do(d, "GET", "/", loopPeer, nil)
	c := sessionOf(t, w)
	big := url.Values{"csrf": {strings.Repeat("a", maxFormBytes)}}
	assert.Equal(t, http.StatusRequestEntityTooLarge, do(d, "POST", "/tasks/1/cancel", loopPeer, big, c).Code)
	assert.Equal(t, http.StatusBadRequest, do(d, "GET", "/tasks?state=nope", loopPeer, nil, c).Code)
	assert.Equal(t, http.StatusBadRequest, do(d, "GET", "/tasks?before=x", loopPeer, nil, c).Code)
	assert.Equal(t, http.StatusBadRequest, do(d, "GET", "/tasks?type="+strings.Repeat("t", 300), loopPeer, nil, c).Code)
	assert.Equal(t, http.StatusBadRequest, do(d, "GET", "/tasks/0", loopPeer, nil, c).Code)
	assert.Equal(t, http.StatusBadRequest, do(d, "GET", "/tasks/abc", loopPeer, nil, c).Code)
	assert.Equal(t, http.StatusNotFound, do(d, "GET", "/tasks/99", loopPeer, nil, c).Code)
	assert.Equal(t, http.StatusNotFound, do(d, "GET", "/nothing", loopPeer, nil, c).Code)
	assert.Empty(t, act.calls())
}

// The next page of a filtered list keeps its filters.
func TestDashboard_TaskListPaging(t *testing.T) {
	d, _, src := newTestDashboardSource(t, nil)
	w := do(d, "GET", "/tasks?state=pending&type=a%26b", loopPeer, nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, core.BrowseQuery{State: core.Pending, Type: "a&b", Limit: pageTasks, MaxScan: listScan}, src.last)
	m := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(w.Body.String())
	require.NotNil(t, m, w.Body.String())
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	w = do(d, "GET", next, loopPeer, nil)
	require.Equal(t, http.StatusOK, w.Code, next)
	assert.Equal(t, core.BrowseQuery{State: core.Pending, Type: "a&b", Before: 1, Limit: pageTasks, MaxScan: listScan}, src.last, next)
}

// Sessions are capped per peer and in all: the oldest go first.
func TestSessions_Bounded(t *testing.T) {
	s := newSessions(nil, nil)
	now := time.Unix(1_700_000_000, 0)
	first := s.create("192.0.2.1", false, false, now)
	for i := range maxSessionsPerPeer + 10 {
		s.create("192.0.2.1", false, false, now.Add(time.Duration(i+1)*time.Second))
	}
	assert.Equal(t, maxSessionsPerPeer, s.byPeer["192.0.2.1"])
	assert.Nil(t, s.lookup(s.cookieValue(first), now.Add(time.Minute)), "the oldest was dropped")
	for i := range 2 * maxSessions {
		s.create(fmt.Sprintf("10.0.%d.%d", i/256, i%256), false, false, now.Add(time.Hour+time.Duration(i)*time.Millisecond))
	}
	assert.Len(t, s.byID, maxSessions)
	total := 0
	for _, n := range s.byPeer {
		total += n
	}
	assert.Equal(t, maxSessions, total, "per-peer counts agree with the sessions")

	// Idle sessions expire.
	ss := s.create("192.0.2.9", false, false, now)
	assert.NotNil(t, s.lookup(s.cookieValue(ss), now.Add(time.Hour)))
	assert.Nil(t, s.lookup(s.cookieValue(ss), now.Add(time.Hour+sessionIdle+time.Second)))
}

// IPv6 peers count by their /64: one host can use a whole one.
func TestPeerKey(t *testing.T) {
	assert.Equal(t, "192.0.2.1", peerKey("192.0.2.1:5"))
	assert.Equal(t, "192.0.2.1", peerKey("[::ffff:192.0.2.1]:5"))
	assert.Equal(t, peerKey("[2001:db8::1]:5"), peerKey("[2001:db8::ffff:1]:6"))
	assert.NotEqual(t, peerKey("[2001:db8::1]:5"), peerKey("[2001:db8:0:1::1]:5"))
}

// The ring keeps the newest samples, and the chart's rates come from
// successive differences.
func TestThroughput(t *testing.T) {
	r := newRing(3)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 5 {
		r.add(t0.Add(time.Duration(i)*5*time.Second), Totals{Submitted: uint64(100 * i), Succeeded: uint64(50 * i), Failed: uint64(10 * i)})
	}
	ss := r.samples()
	require.Len(t, ss, 3)
	assert.Equal(t, uint64(200), ss[0].t.Submitted, "oldest kept first")
	c := throughput(ss, 5*time.Second, 3)
	assert.False(t, c.Empty)
	assert.Equal(t, "20.0", c.Now.Submitted)
	assert.Equal(t, "12.0", c.Now.Ended)
	assert.Equal(t, "2.0", c.Now.Failed)
	assert.Equal(t, 2, len(strings.Fields(c.Submitted)), "a point per interval")
	assert.True(t, throughput(ss[:1], 5*time.Second, 3).Empty)
}

// The task page lists the task's recent transitions, with the executor
// and version of each dispatch.
func TestDashboard_TaskHistory(t *testing.T) {
	d, _, src := newTestDashboardSource(t, nil)
	src.history = map[uint64][]core.Transition{1: {
		{AtMs: 1_700_000_000_000, To: core.Pending},
		{AtMs: 1_700_000_000_500, Version: 4294967297, From: core.Pending, To: core.Dispatched, Attempt: 1, Executor: "ex-<9>"},
	}}
	w := do(d, "GET", "/tasks/1", loopPeer, nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := w.Body.String()
	assert.Contains(t, body, `id="history"`)
	assert.Contains(t, body, "4294967297")
	assert.Contains(t, body, "ex-&lt;9&gt;", "executor names are escaped")
	assert.Contains(t, body, "<td>-</td><td>pending</td>", "the submit came from no state")
	assert.Contains(t, body, "<td>pending</td><td>dispatched</td>")
}
