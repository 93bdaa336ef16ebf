package http

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/server/http/ui"
)

// uiCSP is the Content-Security-Policy of the UI: its own scripts,
// styles and images only, no inline script or style, no framing, forms
// posted only to itself.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"

// isAPI reports whether path is the API's (/v1, health, metrics, MCP):
// every other path is the UI's.
func isAPI(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/mcp", "/v1":
		return true
	}
	return strings.HasPrefix(path, "/v1/")
}

// uiFunc is a UI handler, given its caller.
type uiFunc func(s *Server, w http.ResponseWriter, r *http.Request, c *uiCaller)

// uiRoutes are the UI's pages and forms, and the scope each needs.
var uiRoutes = []struct {
	pattern, scope string
	h              uiFunc
}{
	{"GET /{$}", ScopeRead, (*Server).uiRuns},
	{"GET /runs/rows", ScopeRead, (*Server).uiRows},
	{"GET /runs/{id}", ScopeRead, (*Server).uiRun},
	{"GET /runs/{id}/live", ScopeRead, (*Server).uiLive},
	{"GET /runs/{id}/effects", ScopeRead, (*Server).uiEffects},
	{"POST /runs/{id}/decide", ScopeApprove, (*Server).uiDecide},
	{"POST /runs/{id}/remediate", ScopeApprove, (*Server).uiRemediate},
	{"GET /approvals", ScopeRead, (*Server).uiApprovals},
	{"GET /flows", ScopeRead, (*Server).uiFlows},
	{"GET /flows/{name}", ScopeRead, (*Server).uiFlow},
	{"POST /logout", "", (*Server).uiLogout},
}

// uiHandler is the UI: its pages behind a login (or the local user), the
// login page and the embedded assets, all behind Go's cross-origin
// protection (a form posted from another origin is refused) and the UI's
// security headers.
func (s *Server) uiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", ui.Assets()))
	mux.HandleFunc("GET /login", s.uiLoginPage)
	mux.HandleFunc("POST /login", s.uiLogin)
	for _, rt := range uiRoutes {
		mux.Handle(rt.pattern, s.uiGuard(rt.scope, rt.h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c, _ := s.uiAuthenticate(r)
		s.uiError(w, c, notFound(fmt.Sprintf("no page %s %s", r.Method, r.URL.Path)))
	})
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.uiError(w, nil, statusErr(http.StatusForbidden, fault.Policy, "%s %s came from another site: forms are taken from this server's own pages only", r.Method, r.URL.Path))
	}))
	protected := cop.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", uiCSP)
		if strings.HasPrefix(r.URL.Path, "/assets/") {
			h.Set("Cache-Control", "public, max-age=3600")
		}
		protected.ServeHTTP(w, r)
	})
}

// uiGuard admits a UI request: a caller (else the login page), the scope
// (403), the rate (429), and for a form its CSRF token.
func (s *Server) uiGuard(scope string, h uiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.uiAuthenticate(r)
		if err != nil {
			s.uiError(w, nil, err)
			return
		}
		if c == nil {
			if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" && !strings.HasSuffix(r.URL.Path, "/live") {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			s.uiError(w, nil, statusErr(http.StatusUnauthorized, fault.Policy, "not logged in: log in with a token at /login"))
			return
		}
		if scope != "" && !c.can(scope) {
			s.uiError(w, c, statusErr(http.StatusForbidden, fault.Policy, "token %s (scopes %s) lacks the %s scope this needs",
				c.name, strings.Join(c.token.Scopes, ","), scope))
			return
		}
		if !s.limiter(c.caller).Allow() {
			w.Header().Set("Retry-After", "1")
			s.uiError(w, c, statusErr(http.StatusTooManyRequests, fault.Transient, "more than %g requests a second: slow down", float64(s.o.Rate)))
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes)
			if err := c.checkCSRF(r); err != nil {
				s.uiError(w, c, err)
				return
			}
		}
		h(s, w, r, c)
	})
}

// back is where a form returns: a path of this server, else def.
func back(v, def string) string {
	if strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//") && !strings.ContainsAny(v, "\\\r\n") {
		return v
	}
	return def
}

// uiDecide decides a pending step: the same operation as POST
// /v1/runs/{id}/decisions, recorded with the caller's name.
func (s *Server) uiDecide(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	run, _, err := s.uiRunOf(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	status, ok := decisions[r.PostFormValue("decision")]
	step := r.PostFormValue("step")
	if !ok || status == "settled" || step == "" {
		s.uiError(w, c, requestErr("", "the form names no step, or a decision other than approve or reject"))
		return
	}
	if _, err := s.c.Decide(r.Context(), run.ID, step, rein.Decision{Status: status, Comment: r.PostFormValue("comment"), By: c.name},
		&rein.DecideOptions{Run: run}); err != nil {
		s.uiError(w, c, err)
		return
	}
	http.Redirect(w, r, back(r.PostFormValue("back"), "/approvals"), http.StatusSeeOther)
}

// uiRemediate remediates a premise: the same operation as POST
// /v1/runs/{id}/remediate.
func (s *Server) uiRemediate(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	run, _, err := s.uiRunOf(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	premise := r.PostFormValue("premise")
	if premise == "" {
		s.uiError(w, c, requestErr("/premise", "name the step or call whose result turned out wrong"))
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if _, err := s.c.Remediate(r.Context(), run.ID, premise, &rein.RemediateOptions{Reason: r.PostFormValue("reason")}); err != nil {
		s.uiError(w, c, err)
		return
	}
	http.Redirect(w, r, "/runs/"+run.ID+"/effects", http.StatusSeeOther)
}

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	if s.o.Tokens == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.page(w, http.StatusOK, "login.html", s.base(nil, "Log in", ""))
}

// uiLogin checks a pasted token and starts a session: the cookie holds a
// random session id (HttpOnly, SameSite=Strict, Secure over TLS); the
// server keeps the token's id only.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	if s.o.Tokens == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	secret := strings.TrimSpace(r.PostFormValue("token"))
	t, err := s.o.Tokens.Lookup(secret)
	if err != nil {
		s.uiError(w, nil, err)
		return
	}
	if secret == "" || t == nil {
		b := s.base(nil, "Log in", "")
		b.Message = "That token is not known here (revoked, mistyped, or created for another server)."
		s.page(w, http.StatusUnauthorized, "login.html", b)
		return
	}
	id, _ := s.sess.create(t.ID, s.o.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(sessionTTL / time.Second)})
	s.o.Logf("%s (tenant %q) logged in to the UI", t.Name, t.Tenant)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	if c.sid != "" {
		s.sess.end(c.sid)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
