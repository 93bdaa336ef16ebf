package http

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// The OpenAPI document is JSON of the 3.1 shape, documents every served
// route with its method and scope, and serves every route it documents.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"info"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas         map[string]json.RawMessage `json:"schemas"`
			SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") || doc.Info.Title == "" || doc.Info.Version == "" || len(doc.Paths) == 0 ||
		doc.Components.SecuritySchemes["bearer"] == nil {
		t.Fatalf("openapi.json lacks the 3.1 shape: openapi %q, info %+v, %d paths", doc.OpenAPI, doc.Info, len(doc.Paths))
	}
	served := map[string]route{}
	for _, rt := range routes {
		methods := []string{rt.method}
		if rt.method == "" {
			methods = []string{"GET", "POST", "DELETE"} // /mcp: the streamable HTTP transport's
		}
		for _, m := range methods {
			served[strings.ToLower(m)+" "+rt.path] = rt
		}
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			key := method + " " + path
			documented[key] = true
			rt, ok := served[key]
			if !ok {
				t.Errorf("openapi.json documents %s, which is not served", key)
				continue
			}
			var op struct {
				OperationID string                             `json:"operationId"`
				Scope       string                             `json:"x-rein-scope"`
				Responses   map[string]json.RawMessage         `json:"responses"`
				Security    []map[string][]string              `json:"security"`
				Params      []struct{ Name, In string }        `json:"parameters"`
				Body        *struct{ Content json.RawMessage } `json:"requestBody"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Errorf("%s: %v", key, err)
				continue
			}
			if op.OperationID == "" || len(op.Responses) == 0 {
				t.Errorf("%s has no operationId or responses", key)
			}
			if op.Scope != rt.scope {
				t.Errorf("%s: documented scope %q, served with %q", key, op.Scope, rt.scope)
			}
			for _, p := range op.Params {
				if p.In == "path" && !strings.Contains(path, "{"+p.Name+"}") {
					t.Errorf("%s: path parameter %s is not in the path", key, p.Name)
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(served)) {
		if !documented[key] {
			t.Errorf("%s is served but not in openapi.json", key)
		}
	}
	// every $ref resolves
	var anyDoc any
	_ = json.Unmarshal(openAPI, &anyDoc)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name, found := strings.CutPrefix(ref, "#/components/schemas/")
				if found && doc.Components.Schemas[name] == nil || !found && !strings.HasPrefix(ref, "#/components/responses/") {
					t.Errorf("$ref %s does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(anyDoc)
}
