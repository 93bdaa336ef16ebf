package route

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/value/schema"
)

// Choice is a semantic router's answer.
type Choice struct {
	// Route must be the name of one of the routes offered.
	Route string `json:"route"`
	// Reason says why; it must not be empty.
	Reason string `json:"reason"`
	// Usage and Calls report the model calls made, if any.
	Usage model.Usage `json:"-"`
	Calls int         `json:"-"`
}

// Semantic chooses a route from a closed set when no rule matches.
// Implementations must be safe for concurrent use and honour ctx; they must
// not modify routes. Router.Route checks the choice (a route of the set, a
// non-empty reason) whatever the implementation.
type Semantic interface {
	Choose(ctx context.Context, req Request, routes []Route) (Choice, error)
}

// SemanticFunc adapts a function to Semantic.
type SemanticFunc func(ctx context.Context, req Request, routes []Route) (Choice, error)

// Choose calls f.
func (f SemanticFunc) Choose(ctx context.Context, req Request, routes []Route) (Choice, error) {
	return f(ctx, req, routes)
}

// ModelOptions tunes a ModelSemantic. The zero value is ready to use.
type ModelOptions struct {
	// Model is the model name put in each request (model.Request.Model).
	// Defaults to "" (the adapter's default).
	Model string
	// StepID identifies the calls (model.Request.StepID; the scripted
	// model matches replies by it). Defaults to "route".
	StepID string
	// Corrections is how many corrective requests follow a rejected
	// reply, as model.DecideOptions.Corrections: zero means one, a
	// negative value none.
	Corrections int
}

// ModelSemantic is the model-backed semantic router. It asks the model,
// through model.Decide, for {"route", "reason"} with a JSON Schema whose
// route is an enum of the route names and whose reason is a required,
// non-empty string. A reply naming a route outside the set, or with a blank
// reason, gets one corrective request carrying the problem; a second bad
// reply is a fault.Format error wrapping *model.RejectedError. It never
// maps a bad choice to some other route. Only the request text is sent,
// not its metadata. It is safe for concurrent use.
type ModelSemantic struct {
	m   model.Model
	opt ModelOptions

	mu      sync.Mutex
	schemas map[string]*schema.Schema // by route names joined with NUL
}

var _ Semantic = (*ModelSemantic)(nil)

// NewModelSemantic returns a semantic router asking m. Nil opts means
// defaults.
func NewModelSemantic(m model.Model, opts *ModelOptions) *ModelSemantic {
	s := &ModelSemantic{m: m, schemas: map[string]*schema.Schema{}}
	if opts != nil {
		s.opt = *opts
	}
	if s.opt.StepID == "" {
		s.opt.StepID = "route"
	}
	return s
}

// choiceReply is the JSON the model must reply with.
type choiceReply struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
}

// Choose asks the model to choose one of routes for req. Errors of the
// model are returned as they are (classed by the adapter); a rejected reply
// is a fault.Format error.
func (s *ModelSemantic) Choose(ctx context.Context, req Request, routes []Route) (Choice, error) {
	if len(routes) == 0 {
		return Choice{}, fault.Errorf(fault.Business, "semantic router: no routes to choose from")
	}
	sch, err := s.schemaFor(routes)
	if err != nil {
		return Choice{}, err
	}
	byName := make(map[string]int, len(routes))
	for i, rt := range routes {
		byName[rt.Name] = i
	}
	names := func() string { return joinNames(routes) }
	mreq := &model.Request{
		Model:    s.opt.Model,
		Decision: "route",
		StepID:   s.opt.StepID,
		Messages: []model.Message{{Role: model.User, Content: req.Text}},
	}
	d, err := model.Decide(ctx, s.m, mreq, model.DecideOptions[choiceReply]{
		Schema:      sch,
		Instruction: Instruction(routes),
		Corrections: s.opt.Corrections,
		Check: func(c choiceReply) error {
			if msg := checkChoice(Choice{Route: c.Route, Reason: c.Reason}, byName, names); msg != "" {
				return fmt.Errorf("%s", msg)
			}
			return nil
		},
	})
	if err != nil {
		return Choice{}, err
	}
	return Choice{Route: d.Value.Route, Reason: strings.TrimSpace(d.Value.Reason), Usage: d.Usage, Calls: d.Calls}, nil
}

// Instruction is the system message the model-backed semantic router
// sends (model.Decide appends the JSON Schema to it): the closed list of
// routes, one per line with its description, and what to answer.
func Instruction(routes []Route) string {
	var b strings.Builder
	b.WriteString("You are a router. Choose exactly one route for the user's request from this closed list of routes (name: description):\n")
	for _, rt := range routes {
		fmt.Fprintf(&b, "- %s: %s\n", rt.Name, strings.Join(strings.Fields(rt.Description), " "))
	}
	b.WriteString("Answer with the route's name exactly as listed (no other value is accepted) and a one-sentence reason. Reply with one JSON object only, no prose")
	return b.String()
}

// ChoiceSchema returns the JSON Schema of a choice among routes: an object
// with route (an enum of the route names) and reason (a non-empty string),
// both required, nothing else allowed.
func ChoiceSchema(routes []Route) json.RawMessage {
	names := make([]string, len(routes))
	for i, rt := range routes {
		names[i] = rt.Name
	}
	doc := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"route":  map[string]any{"type": "string", "enum": names, "description": "the name of the chosen route"},
			"reason": map[string]any{"type": "string", "minLength": 1, "description": "why the request belongs to this route, in one sentence"},
		},
		"required":             []string{"route", "reason"},
		"additionalProperties": false,
	}
	raw, _ := json.Marshal(doc) // cannot fail: strings, maps and slices only
	return raw
}

func (s *ModelSemantic) schemaFor(routes []Route) (*schema.Schema, error) {
	// NUL cannot occur in a route name (checkName), so distinct route
	// sets have distinct keys; ", " can.
	names := make([]string, len(routes))
	for i, rt := range routes {
		names[i] = rt.Name
	}
	key := strings.Join(names, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[key]; ok {
		return sch, nil
	}
	sch, err := schema.Compile("route choice", ChoiceSchema(routes))
	if err != nil {
		return nil, fmt.Errorf("semantic router: %w", err)
	}
	if len(s.schemas) >= 64 {
		clear(s.schemas) // route sets are few; bound the cache anyway
	}
	s.schemas[key] = sch
	return sch, nil
}

func joinNames(routes []Route) string {
	names := make([]string, len(routes))
	for i, rt := range routes {
		names[i] = rt.Name
	}
	return strings.Join(names, ", ")
}

// Scripted is a semantic router for tests: it answers from a map keyed by
// request text, or from a function, and counts its calls. It is safe for
// concurrent use.
type Scripted struct {
	byText map[string]Choice
	fn     SemanticFunc
	calls  atomic.Int64
}

var _ Semantic = (*Scripted)(nil)

// ScriptedMap returns a Scripted answering each request whose text is a key
// of choices with its value; any other text is a fault.Business error. The
// map is copied.
func ScriptedMap(choices map[string]Choice) *Scripted {
	return &Scripted{byText: maps.Clone(choices)}
}

// ScriptedFunc returns a Scripted answering with f.
func ScriptedFunc(f SemanticFunc) *Scripted {
	return &Scripted{fn: f}
}

// Choose answers req from the map or the function. It returns ctx's error,
// classed with fault.ClassOf in mind, when ctx is already done.
func (s *Scripted) Choose(ctx context.Context, req Request, routes []Route) (Choice, error) {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return Choice{}, err
	}
	if s.fn != nil {
		return s.fn(ctx, req, routes)
	}
	c, ok := s.byText[req.Text]
	if !ok {
		return Choice{}, fault.Errorf(fault.Business, "scripted semantic router has no choice for %q", req.Text)
	}
	return c, nil
}

// Calls returns how many times Choose was called.
func (s *Scripted) Calls() int { return int(s.calls.Load()) }
