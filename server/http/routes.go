package http

import (
	"net/http"
)

// route is one served route: its method and path (an http.ServeMux
// pattern), the scope it needs ("" for none: health and the OpenAPI
// document) and its handler. routes is the one list the mux, the scopes
// and the OpenAPI check read.
type route struct {
	method, path, scope string
	handler             func(s *Server) http.Handler
}

func (rt route) pattern() string {
	if rt.method == "" {
		return rt.path
	}
	return rt.method + " " + rt.path
}

func hf(f func(s *Server, w http.ResponseWriter, r *http.Request)) func(s *Server) http.Handler {
	return func(s *Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f(s, w, r) })
	}
}

var routes = []route{
	{"GET", "/healthz", "", hf((*Server).healthz)},
	{"GET", "/readyz", "", hf((*Server).readyz)},
	{"GET", "/v1/openapi.json", "", hf((*Server).openapi)},
	{"GET", "/v1/flows", ScopeRead, hf((*Server).listFlows)},
	{"POST", "/v1/runs", ScopeRun, hf((*Server).startRun)},
	{"GET", "/v1/runs", ScopeRead, hf((*Server).listRuns)},
	{"GET", "/v1/runs/{id}", ScopeRead, hf((*Server).showRun)},
	{"GET", "/v1/runs/{id}/events", ScopeRead, hf((*Server).events)},
	{"GET", "/v1/approvals", ScopeRead, hf((*Server).approvals)},
	{"POST", "/v1/runs/{id}/decisions", ScopeApprove, hf((*Server).decide)},
	{"POST", "/v1/runs/{id}/cancel", ScopeRun, hf((*Server).cancel)},
	{"POST", "/v1/runs/{id}/retry", ScopeRun, hf((*Server).retry)},
	{"GET", "/v1/runs/{id}/effects", ScopeRead, hf((*Server).effects)},
	{"GET", "/v1/runs/{id}/why", ScopeRead, hf((*Server).why)},
	{"GET", "/v1/runs/{id}/impact", ScopeRead, hf((*Server).impact)},
	{"POST", "/v1/runs/{id}/remediate", ScopeApprove, hf((*Server).remediate)},
	{"GET", "/v1/runs/{id}/artifacts", ScopeRead, hf((*Server).artifacts)},
	{"GET", "/v1/runs/{id}/artifacts/{name}", ScopeRead, hf((*Server).artifact)},
	{"GET", "/v1/resources/invalidated", ScopeRead, hf((*Server).listInvalidated)},
	{"DELETE", "/v1/resources/invalidated", ScopeApprove, hf((*Server).clearInvalidated)},
	{"GET", "/metrics", ScopeAdmin, hf((*Server).metrics)},
	{"", "/mcp", ScopeRun, hf((*Server).mcp)},
}
