package http

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/reinhq/rein/fault"
)

// The UI's session cookie and how long a session lasts.
const (
	sessionCookie = "rein_session"
	sessionTTL    = 12 * time.Hour
)

// session is a browser logged in with a token: only the token's id is
// kept (never the token), so a token revoked ends its sessions at their
// next request.
type session struct {
	tokenID string
	csrf    string
	expires time.Time
}

// sessions are the UI's logins, in memory: a restart logs everyone out.
type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	key []byte // the CSRF key of the local user (a server without tokens)
}

func newSessions() *sessions {
	return &sessions{m: map[string]*session{}, key: []byte(randomString())}
}

// randomString is 32 random bytes, base64url.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (ss *sessions) create(tokenID string, now time.Time) (id string, s *session) {
	id, s = randomString(), &session{tokenID: tokenID, csrf: randomString(), expires: now.Add(sessionTTL)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, old := range ss.m { // forget the expired
		if now.After(old.expires) {
			delete(ss.m, k)
		}
	}
	ss.m[id] = s
	return id, s
}

func (ss *sessions) get(id string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil || now.After(s.expires) {
		delete(ss.m, id)
		return nil
	}
	return s
}

func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// localCSRF is the CSRF token of the local user's forms: a MAC of the
// server's key, unknown to another origin.
func (ss *sessions) localCSRF() string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte("local"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// uiCaller is who a UI request comes from: the caller, and the CSRF token
// its forms carry; sid is its session ("" for the local user or a bearer
// token).
type uiCaller struct {
	*caller
	csrf string
	sid  string
}

// uiAuthenticate is the caller of a UI request: the local user of a
// server without tokens, the token of an Authorization header, or the
// token of the session cookie. Nil without any (the page asks to log in).
func (s *Server) uiAuthenticate(r *http.Request) (*uiCaller, error) {
	if s.o.Tokens == nil {
		return &uiCaller{caller: &caller{name: "local"}, csrf: s.sess.localCSRF()}, nil
	}
	if r.Header.Get("Authorization") != "" {
		c, err := s.authenticate(r)
		if err != nil {
			return nil, err
		}
		return &uiCaller{caller: c}, nil // no forms without a session: no CSRF token
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, nil
	}
	se := s.sess.get(ck.Value, s.o.Now())
	if se == nil {
		return nil, nil
	}
	list, err := s.o.Tokens.List()
	if err != nil {
		return nil, err
	}
	for _, t := range list {
		if t.ID == se.tokenID {
			return &uiCaller{caller: &caller{name: t.Name, tenant: t.Tenant, token: t}, csrf: se.csrf, sid: ck.Value}, nil
		}
	}
	s.sess.end(ck.Value) // revoked
	return nil, nil
}

// can reports whether c has scope.
func (c *uiCaller) can(scope string) bool { return c.token == nil || c.token.Has(scope) }

// checkCSRF refuses a form whose csrf field is not the caller's token.
func (c *uiCaller) checkCSRF(r *http.Request) error {
	got := r.PostFormValue("csrf")
	if c.csrf == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.csrf)) != 1 {
		return statusErr(http.StatusForbidden, fault.Policy, "the form's CSRF token is missing or stale: reload the page and send it again")
	}
	return nil
}
