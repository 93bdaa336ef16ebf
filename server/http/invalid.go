package http

import (
	"net/http"

	"github.com/reinhq/rein/store"
)

// listInvalidated answers GET /v1/resources/invalidated: the caller's
// tenant's invalidated resources (of ?resource= when given), oldest first.
func (s *Server) listInvalidated(w http.ResponseWriter, r *http.Request) {
	resources := r.URL.Query()["resource"]
	if len(resources) > store.MaxInvalidatedLookup {
		writeProblem(w, requestErr("", "?resource= names %d resources; at most %d at once", len(resources), store.MaxInvalidatedLookup))
		return
	}
	rows, err := s.c.Store().Invalidated(r.Context(), &store.InvalidatedParams{Tenant: tenantOf(r), Resources: resources})
	if err != nil {
		writeProblem(w, err)
		return
	}
	if rows == nil {
		rows = []*store.Invalidation{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"invalidated": rows})
}

// clearInvalidated answers DELETE /v1/resources/invalidated?resource=R:
// a person cleared R (of ?run= only, when given) in the caller's tenant.
func (s *Server) clearInvalidated(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res := q.Get("resource")
	if res == "" {
		writeProblem(w, requestErr("", "?resource= is missing: name the invalidated resource to clear (GET /v1/resources/invalidated lists them)"))
		return
	}
	n, err := s.c.Store().ClearInvalidated(r.Context(), &store.ClearInvalidatedParams{Tenant: tenantOf(r), Resource: res, RunID: q.Get("run")})
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"resource": res, "cleared": n})
}

// tenantOf is the tenant of r's caller: its token's, "" without one.
func tenantOf(r *http.Request) string {
	if c := callerOf(r.Context()); c != nil {
		return c.tenant
	}
	return ""
}
