package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Sessions are kept in memory, bounded per peer and in all. A peer can
// grow nothing without limit. A restart logs everyone out.
const (
	cookieName         = "apollo11_session"
	maxSessions        = 1024
	maxSessionsPerPeer = 16
	sessionIdle        = 12 * time.Hour
	sessionMaxAge      = 7 * 24 * time.Hour
)

type session struct {
	id      [16]byte
	peer    string
	authed  bool // logged in with the token
	admin   bool // proved the admin token
	created time.Time
	seen    time.Time
}

// sessions maps session ids to sessions. The cookie carries the id and
// an HMAC of it, never the token. The HMAC's key is derived from the
// token and a random salt of this process.
type sessions struct {
	key        []byte
	token      []byte // the shared token; nil when there is none
	adminToken []byte // the admin token; nil when there is none

	mu     sync.Mutex
	byID   map[[16]byte]*session
	byPeer map[string]int
}

func newSessions(token, adminToken []byte) *sessions {
	salt := make([]byte, 32)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	mac := hmac.New(sha256.New, salt)
	mac.Write([]byte("apollo11 dashboard sessions\x00"))
	mac.Write(token)
	return &sessions{key: mac.Sum(nil), token: token, adminToken: adminToken,
		byID: make(map[[16]byte]*session), byPeer: make(map[string]int)}
}

func (s *sessions) sign(label string, id [16]byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(label))
	mac.Write(id[:])
	return hex.EncodeToString(mac.Sum(nil))
}

// cookieValue is the session's id and its HMAC, in hex.
func (s *sessions) cookieValue(ss *session) string {
	return hex.EncodeToString(ss.id[:]) + "." + s.sign("session\x00", ss.id)
}

// csrf is the session's form token, an HMAC of its id.
func (s *sessions) csrf(ss *session) string { return s.sign("csrf\x00", ss.id) }

func (s *sessions) checkCSRF(ss *session, got string) bool {
	return hmac.Equal([]byte(s.csrf(ss)), []byte(got))
}

// matches compares a login's value with a secret in constant time,
// whatever their lengths. Both are hashed with the session key first. A
// nil secret matches nothing.
func (s *sessions) matches(given string, secret []byte) bool {
	if secret == nil {
		return false
	}
	a := hmac.New(sha256.New, s.key)
	a.Write([]byte("login\x00" + given))
	b := hmac.New(sha256.New, s.key)
	b.Write([]byte("login\x00"))
	b.Write(secret)
	return hmac.Equal(a.Sum(nil), b.Sum(nil))
}

// lookup returns the live session a cookie value names, or nil.
func (s *sessions) lookup(value string, now time.Time) *session {
	idHex, mac, ok := strings.Cut(value, ".")
	var id [16]byte
	if !ok || len(idHex) != 2*len(id) {
		return nil
	}
	if _, err := hex.Decode(id[:], []byte(idHex)); err != nil {
		return nil
	}
	if !hmac.Equal([]byte(mac), []byte(s.sign("session\x00", id))) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[id]
	if ss == nil {
		return nil
	}
	if now.Sub(ss.seen) > sessionIdle || now.Sub(ss.created) > sessionMaxAge {
		s.dropLocked(ss)
		return nil
	}
	ss.seen = now
	return ss
}

// create makes a session for peer. At the peer's cap it first drops that
// peer's oldest. At the global cap it drops the oldest of all.
func (s *sessions) create(peer string, authed, admin bool, now time.Time) *session {
	ss := &session{peer: peer, authed: authed, admin: admin, created: now, seen: now}
	_, _ = rand.Read(ss.id[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPeer[peer] >= maxSessionsPerPeer {
		s.dropLocked(s.oldestLocked(peer))
	}
	if len(s.byID) >= maxSessions {
		s.dropLocked(s.oldestLocked(""))
	}
	s.byID[ss.id] = ss
	s.byPeer[peer]++
	return ss
}

func (s *sessions) drop(ss *session) {
	s.mu.Lock()
	s.dropLocked(ss)
	s.mu.Unlock()
}

func (s *sessions) dropLocked(ss *session) {
	if ss == nil || s.byID[ss.id] != ss {
		return
	}
	delete(s.byID, ss.id)
	if s.byPeer[ss.peer]--; s.byPeer[ss.peer] <= 0 {
		delete(s.byPeer, ss.peer)
	}
}

// oldestLocked returns the least recently seen session of peer, or of all
// for "". It scans, as there are at most maxSessions.
func (s *sessions) oldestLocked(peer string) *session {
	var old *session
	for _, ss := range s.byID {
		if (peer == "" || ss.peer == peer) && (old == nil || ss.seen.Before(old.seen)) {
			old = ss
		}
	}
	return old
}

// peerKey names the peer of a remote address for the per-peer caps. That is
// its IPv4 address, or the /64 of an IPv6 one, since one host holds a /64.
func peerKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// isLoopback reports whether a remote address is on this host.
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// hostAllowed accepts a Host header naming an IP address, localhost, or
// the host the dashboard listens on. An attacker's page may rebind a DNS
// name to 127.0.0.1, but that name is none of these.
func hostAllowed(hostHeader, listenHost string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || (listenHost != "" && host == strings.ToLower(listenHost))
}
