package http

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of the routes (openapi_test.go
// checks it against routes both ways).
//
//go:embed openapi.json
var openAPI []byte

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
