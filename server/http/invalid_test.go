package http_test

import (
	"net/http"
	"testing"

	"github.com/reinhq/rein/store"
)

// TestInvalidatedResourcesByTenant: GET /v1/resources/invalidated lists
// the caller's tenant's invalidated resources only, DELETE clears one of
// them (approve scope), and another tenant's token neither sees nor
// clears it.
func TestInvalidatedResourcesByTenant(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true})
	if err := e.c.Store().Invalidate(t.Context(), []*store.Invalidation{
		{Tenant: "acme", Resource: "acct:a-1", RunID: "r1", CallKey: "r1/pay/1", Premise: "p"},
		{Tenant: "acme", Resource: "acct:a-2", RunID: "r1", CallKey: "r1/pay/2", Premise: "p"},
		{Tenant: "globex", Resource: "acct:a-1", RunID: "g1", CallKey: "g1/pay/1", Premise: "q"},
	}); err != nil {
		t.Fatal(err)
	}
	acme, globex := e.token("ops", "acme", "read", "approve"), e.token("g", "globex", "read", "approve")
	reader := e.token("viewer", "acme", "read")
	list := func(token, query string) []store.Invalidation {
		t.Helper()
		r := e.do("GET", "/v1/resources/invalidated"+query, token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", query, r.status, r.body)
		}
		var v struct{ Invalidated []store.Invalidation }
		r.json(t, &v)
		return v.Invalidated
	}
	if got := list(acme, ""); len(got) != 2 || got[0].Resource != "acct:a-1" || got[0].RunID != "r1" || got[1].Resource != "acct:a-2" {
		t.Errorf("acme's list: %+v", got)
	}
	if got := list(acme, "?resource=acct:a-2&resource=nope"); len(got) != 1 || got[0].Resource != "acct:a-2" {
		t.Errorf("acme's lookup: %+v", got)
	}
	if got := list(globex, ""); len(got) != 1 || got[0].RunID != "g1" {
		t.Errorf("globex's list: %+v", got)
	}
	if r := e.do("DELETE", "/v1/resources/invalidated?resource=acct:a-1", reader, nil); r.status != http.StatusForbidden {
		t.Errorf("DELETE with a read token: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/resources/invalidated", acme, nil); r.status != http.StatusBadRequest {
		t.Errorf("DELETE without ?resource=: %d %s", r.status, r.body)
	} else {
		r.problem(t)
	}
	r := e.do("DELETE", "/v1/resources/invalidated?resource=acct:a-1", globex, nil)
	var cleared struct {
		Resource string
		Cleared  int
	}
	if r.json(t, &cleared); r.status != http.StatusOK || cleared.Cleared != 1 {
		t.Fatalf("globex clears its acct:a-1: %d %s", r.status, r.body)
	}
	if got := list(acme, "?resource=acct:a-1"); len(got) != 1 {
		t.Errorf("acme's acct:a-1 after globex cleared its own: %+v", got)
	}
	if r = e.do("DELETE", "/v1/resources/invalidated?resource=acct:a-1", acme, nil); r.status != http.StatusOK {
		t.Fatalf("acme clears acct:a-1: %d %s", r.status, r.body)
	}
	if got := list(acme, ""); len(got) != 1 || got[0].Resource != "acct:a-2" {
		t.Errorf("acme's list after the clear: %+v", got)
	}
}
