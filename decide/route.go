package decide

import (
	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
)

// The router's values, read through these names.
type (
	// Routes is a parsed routes file: its routes, its rules in file
	// order, the model of its semantic router and its fallback route.
	Routes = route.File
	// RouteRequest is what is routed: a text and metadata for rule
	// expressions.
	RouteRequest = route.Request
	// RouteResult is the route chosen, how (rule, semantic, fallback) and
	// why.
	RouteResult = route.Result
	// RoutesError lists every problem of a routes file, located.
	RoutesError = route.Error
	// Router routes requests over a closed set of routes.
	Router = route.Router
	// Semantic chooses a route when no rule matched.
	Semantic = route.Semantic
)

// ErrNoMatch: no rule matched and there is no semantic router nor a
// fallback route.
var ErrNoMatch = route.ErrNoMatch

// ParseRoutes reads and validates a routes file; every problem comes back
// located, in a *RoutesError.
func ParseRoutes(path string) (*Routes, error) { return route.ParseFile(path) }

// ModelSemantic is the semantic router asking m to choose one of the
// routes and say why, through model.Decide (a choice outside the set gets
// one corrective request, then an error: never a guess). name is the
// model name put in each request ("" for the adapter's default), step the
// step id the requests carry (what a script's step: matches; "" for
// "route").
func ModelSemantic(m model.Model, name, step string) Semantic {
	return route.NewModelSemantic(m, &route.ModelOptions{Model: name, StepID: step})
}
