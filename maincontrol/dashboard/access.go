package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"path"
	"time"
)

// maxFormBytes bounds a form's body. The largest holds a task type name
// and a CSRF token.
const maxFormBytes = 4 << 10

// crossOrigin refuses state-changing requests that a browser marks as
// coming from another site. Each form's CSRF token guards them too.
var crossOrigin = http.NewCrossOriginProtection()

// view is what every page template gets.
type view struct {
	Title  string
	Nav    string // which navigation link is current
	CSRF   string
	Login  bool // a token is set: show the logout button
	CanAct bool // actions are allowed for this request
	// ActNote says why actions are not offered, when they are not.
	ActNote string
	// CanAdmin and AdminNote are the same for the admin actions.
	CanAdmin  bool
	AdminNote string
	// AdminLogin offers a login with the admin token.
	AdminLogin bool
	// TokenField and AdminField say which fields the login form has.
	TokenField, AdminField bool
	Flash                  string
	Page                   any
}

// pageFunc fills a page. It returns the template's name and its data.
type pageFunc func(r *http.Request, v *view) (string, int, error)

// session returns the request's live session, or nil.
func (d *Dashboard) session(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	return d.sessions.lookup(c.Value, time.Now())
}

func (d *Dashboard) setCookie(w http.ResponseWriter, r *http.Request, ss *session) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: d.sessions.cookieValue(ss), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// mayAct reports whether this request may take actions, and if not why.
func (d *Dashboard) mayAct(r *http.Request, ss *session) (bool, string) {
	if d.o.Token != nil {
		return ss != nil && ss.authed, "log in to act"
	}
	if isLoopback(r.RemoteAddr) {
		return true, ""
	}
	return false, "actions are taken only from this host while the main control has no --token-file"
}

// mayAdmin reports whether this request may take the admin actions,
// and if not why.
func (d *Dashboard) mayAdmin(r *http.Request, ss *session) (bool, string) {
	if ok, why := d.mayAct(r, ss); !ok {
		return false, why
	}
	if d.o.AdminToken != nil && (ss == nil || !ss.admin) {
		return false, "log in with the admin token to requeue, pause or resume"
	}
	return true, ""
}

// page wraps a GET page. With a token, it needs a logged-in session.
// Without one, it gives each browser a session for its form tokens.
func (d *Dashboard) page(fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss := d.session(r)
		if d.o.Token != nil && (ss == nil || !ss.authed) {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if ss == nil {
			ss = d.sessions.create(peerKey(r.RemoteAddr), false, false, time.Now())
			d.setCookie(w, r, ss)
		}
		v := &view{CSRF: d.sessions.csrf(ss), Login: d.o.Token != nil || ss.admin, Flash: flashes[r.URL.Query().Get("done")]}
		v.CanAct, v.ActNote = d.mayAct(r, ss)
		v.CanAdmin, v.AdminNote = d.mayAdmin(r, ss)
		v.AdminLogin = d.o.AdminToken != nil && !ss.admin
		name, status, err := fn(r, v)
		if err != nil {
			d.fail(w, status, err)
			return
		}
		d.render(w, status, name, v)
	}
}

// flashes are the notes an action's redirect may ask a page to show. The
// set is fixed, so a link cannot make the page say anything else.
var flashes = map[string]string{
	"cancel":  "Cancel sent: the main control confirmed it.",
	"requeue": "Requeue sent: the main control confirmed it.",
	"pause":   "Task type paused: its tasks are not dispatched until it is resumed.",
	"resume":  "Task type resumed.",
}

// actionFunc performs an action and returns where to go next.
type actionFunc func(ctx context.Context, r *http.Request) (string, error)

// errStatus carries the HTTP status an action's error should get.
type errStatus struct {
	status int
	err    error
}

func (e *errStatus) Error() string { return e.err.Error() }
func (e *errStatus) Unwrap() error { return e.err }

// action wraps a POST. It checks the body's size, the origin, the
// session's right to act and its CSRF token. Then fn runs under a timeout.
func (d *Dashboard) action(fn actionFunc) http.HandlerFunc { return d.act(false, fn) }

// adminAction is action for the admin actions.
func (d *Dashboard) adminAction(fn actionFunc) http.HandlerFunc { return d.act(true, fn) }

func (d *Dashboard) act(admin bool, fn actionFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := crossOrigin.Check(r); err != nil {
			d.fail(w, http.StatusForbidden, errors.New("cross-origin request refused"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			d.fail(w, http.StatusRequestEntityTooLarge, errors.New("form too large or malformed"))
			return
		}
		ss := d.session(r)
		if ss == nil {
			d.fail(w, http.StatusForbidden, errors.New("no session (or it expired): load the page again"))
			return
		}
		may := d.mayAct
		if admin {
			may = d.mayAdmin
		}
		if ok, why := may(r, ss); !ok {
			d.fail(w, http.StatusForbidden, errors.New(why))
			return
		}
		if !d.sessions.checkCSRF(ss, r.PostForm.Get("csrf")) {
			d.fail(w, http.StatusForbidden, errors.New("bad or missing form token: load the page again"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
		defer cancel()
		next, err := fn(ctx, r)
		d.logAction(r, ss, err)
		if err != nil {
			status := http.StatusBadGateway
			var es *errStatus
			if errors.As(err, &es) {
				status = es.status
			}
			d.fail(w, status, err)
			return
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// loginView is the login form. It has a token field when the main control
// has a token, and an admin token field when it has an admin token.
func (d *Dashboard) loginView(flash string) *view {
	return &view{Title: "Log in", Flash: flash, TokenField: d.o.Token != nil, AdminField: d.o.AdminToken != nil}
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if d.o.Token == nil && d.o.AdminToken == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d.render(w, http.StatusOK, "login", d.loginView(""))
}

// login checks the form's tokens. The shared token is checked when there
// is one, and the admin token when it is given. Without a shared token,
// the admin token is the only field. A session proving it may take the
// admin actions.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if d.o.Token == nil && d.o.AdminToken == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if err := crossOrigin.Check(r); err != nil {
		d.fail(w, http.StatusForbidden, errors.New("cross-origin request refused"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		d.fail(w, http.StatusRequestEntityTooLarge, errors.New("form too large or malformed"))
		return
	}
	given, givenAdmin := r.PostForm.Get("token"), r.PostForm.Get("admin_token")
	ok := d.o.Token == nil || d.sessions.matches(given, d.o.Token)
	admin := givenAdmin != "" && d.sessions.matches(givenAdmin, d.o.AdminToken)
	if !ok || (givenAdmin != "" && !admin) || (d.o.Token == nil && !admin) {
		d.log.Warn("dashboard login refused: wrong token", "remote", r.RemoteAddr)
		d.render(w, http.StatusUnauthorized, "login", d.loginView("Wrong token."))
		return
	}
	if old := d.session(r); old != nil {
		d.sessions.drop(old) // a fresh id at each login
	}
	d.setCookie(w, r, d.sessions.create(peerKey(r.RemoteAddr), true, admin, time.Now()))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if err := crossOrigin.Check(r); err != nil {
		d.fail(w, http.StatusForbidden, errors.New("cross-origin request refused"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	_ = r.ParseForm()
	if ss := d.session(r); ss != nil && d.sessions.checkCSRF(ss, r.PostForm.Get("csrf")) {
		d.sessions.drop(ss)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// logAction records who took an action. All actions share one loopback
// connection, so the HTTP peer and session are the only trace of a person.
func (d *Dashboard) logAction(r *http.Request, ss *session, err error) {
	attrs := []any{"action", path.Base(r.URL.Path), "remote", r.RemoteAddr, "session", sessionTag(ss)}
	if id := r.PathValue("id"); id != "" {
		attrs = append(attrs, "task_id", id)
	}
	if t := r.PostForm.Get("type"); t != "" {
		attrs = append(attrs, "task_type", t)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	d.log.Info("dashboard action", attrs...)
}

// sessionTag is a short hash of a session id. It tells sessions apart in
// logs without giving their readers a usable id.
func sessionTag(ss *session) string {
	sum := sha256.Sum256(ss.id[:])
	return hex.EncodeToString(sum[:6])
}
