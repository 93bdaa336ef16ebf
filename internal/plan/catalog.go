package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// DefaultMaxSteps is the plan length a Catalog allows when its config does
// not say.
const DefaultMaxSteps = 20

// CatalogConfig describes the tools a plan may use.
type CatalogConfig struct {
	// Tools are the specs of every tool available. Names must be unique.
	Tools []tool.Spec
	// Allowed names the subset of Tools a plan may call (a flow step's
	// tools:). Nil means all of Tools except the plan tools.
	Allowed []string
	// MaxSteps caps the length of a plan. Defaults to DefaultMaxSteps.
	MaxSteps int
	// PlanTools names tools that themselves run plans; a plan may never call
	// them. MetaTool (execute_plan) is always one.
	PlanTools []string
}

// Catalog is the compiled set of tools a plan is validated against: each
// tool's input and output schema compiled once, the allowed subset and the
// plan-length cap. It is immutable and safe for concurrent use.
type Catalog struct {
	shared   *catalogShared
	allowed  map[string]bool
	names    []string // allowed, sorted
	maxSteps int
}

type catalogShared struct {
	tools     map[string]*entry
	all       []string // sorted
	planTools map[string]bool

	// walks caches what the schemas say at the paths plans use (see
	// schemaAt), up to maxWalks entries.
	walksMu sync.RWMutex
	walks   map[walkKey]schema.Type // types, or walkUndeclared

	planSchemaOnce sync.Once
	planSchema     *schema.Schema
	planSchemaErr  error
}

type entry struct {
	spec   tool.Spec
	in     *schema.Schema // nil: any args
	inQ    *quick         // fast acceptance of args; nil: always ask in
	out    *schema.Schema // nil: no output schema
	inDoc  any
	outDoc any
}

// NewCatalog compiles cfg. It returns an error naming the tool when a name
// is empty or repeated, a schema does not compile, an allowed name is not
// among Tools, or a plan tool is allowed.
func NewCatalog(cfg CatalogConfig) (*Catalog, error) {
	sh := &catalogShared{tools: make(map[string]*entry, len(cfg.Tools)), planTools: map[string]bool{MetaTool: true}}
	for _, n := range cfg.PlanTools {
		sh.planTools[n] = true
	}
	for _, spec := range cfg.Tools {
		if spec.Name == "" {
			return nil, fmt.Errorf("plan catalog: a tool has no name")
		}
		if _, dup := sh.tools[spec.Name]; dup {
			return nil, fmt.Errorf("plan catalog: tool %q is listed twice", spec.Name)
		}
		e := &entry{spec: spec}
		if len(spec.InputSchema) > 0 {
			s, err := schema.Compile(spec.Name+" input_schema", spec.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("plan catalog: tool %s: %w", spec.Name, err)
			}
			e.in, e.inDoc = s, s.Doc
			e.inQ = compileQuick(s.Doc, 0)
		}
		if len(spec.OutputSchema) > 0 {
			s, err := schema.Compile(spec.Name+" output_schema", spec.OutputSchema)
			if err != nil {
				return nil, fmt.Errorf("plan catalog: tool %s: %w", spec.Name, err)
			}
			e.out, e.outDoc = s, s.Doc
		}
		sh.tools[spec.Name] = e
		sh.all = append(sh.all, spec.Name)
	}
	sort.Strings(sh.all)
	c := &Catalog{shared: sh, maxSteps: cfg.MaxSteps}
	if c.maxSteps <= 0 {
		c.maxSteps = DefaultMaxSteps
	}
	if cfg.Allowed == nil {
		for _, n := range sh.all {
			if !sh.planTools[n] {
				c.names = append(c.names, n)
			}
		}
	} else if err := c.setAllowed(cfg.Allowed); err != nil {
		return nil, err
	}
	c.allowed = make(map[string]bool, len(c.names))
	for _, n := range c.names {
		c.allowed[n] = true
	}
	return c, nil
}

func (c *Catalog) setAllowed(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if c.shared.planTools[n] {
			return fmt.Errorf("plan catalog: tool %q runs plans itself and cannot be allowed inside a plan: plans do not nest", n)
		}
		if _, ok := c.shared.tools[n]; !ok {
			return fmt.Errorf("plan catalog: allowed tool %q is not among the tools (have %s)", n, strings.Join(c.shared.all, ", "))
		}
		if !seen[n] {
			seen[n] = true
			c.names = append(c.names, n)
		}
	}
	sort.Strings(c.names)
	return nil
}

// Restrict returns a catalog sharing c's compiled schemas that allows only
// the named tools (nil: the same as c) and at most maxSteps steps (0, or a
// value above c's: c's). It narrows and never widens: naming a tool c does
// not allow is an error.
func (c *Catalog) Restrict(allowed []string, maxSteps int) (*Catalog, error) {
	out := &Catalog{shared: c.shared, allowed: c.allowed, names: c.names, maxSteps: c.maxSteps}
	if maxSteps > 0 && maxSteps < c.maxSteps {
		out.maxSteps = maxSteps
	}
	if allowed != nil {
		for _, n := range allowed {
			if !c.allowed[n] && !c.shared.planTools[n] && c.shared.tools[n] != nil {
				return nil, fmt.Errorf("plan catalog: tool %q is not allowed here (allowed: %s)", n, strings.Join(c.names, ", "))
			}
		}
		out.names = nil
		if err := out.setAllowed(allowed); err != nil {
			return nil, err
		}
		out.allowed = make(map[string]bool, len(out.names))
		for _, n := range out.names {
			out.allowed[n] = true
		}
	}
	return out, nil
}

// MaxSteps is the longest plan the catalog accepts.
func (c *Catalog) MaxSteps() int { return c.maxSteps }

// Allowed returns the names of the tools a plan may call, sorted.
func (c *Catalog) Allowed() []string { return append([]string(nil), c.names...) }

// Spec returns the spec of an allowed tool.
func (c *Catalog) Spec(name string) (tool.Spec, bool) {
	if !c.allowed[name] {
		return tool.Spec{}, false
	}
	return c.shared.tools[name].spec, true
}

const (
	maxWalks       = 1 << 14
	walkUndeclared = 0xff
)

type walkKey struct {
	e    *entry
	in   bool
	path string
}

// schemaAt returns the JSON types e's output (or, with in, input) schema
// gives the value at path, 0 when it does not say; and a message when the
// schema does not declare the path (label names its root). key identifies
// path for the cache. Declared paths are cached per catalog family; an
// undeclared output path is not (its message depends on label).
func (c *Catalog) schemaAt(e *entry, in bool, path []ref.Segment, key, label string) (schema.Type, string) {
	k := walkKey{e: e, in: in, path: key}
	sh := c.shared
	sh.walksMu.RLock()
	t, ok := sh.walks[k]
	sh.walksMu.RUnlock()
	if ok {
		if t != walkUndeclared {
			return t, ""
		}
		return 0, "undeclared"
	}
	doc := e.outDoc
	if in {
		doc = e.inDoc
	}
	t, msg := walkSchema(doc, path, label)
	if msg != "" {
		if !in {
			return 0, msg
		}
		t = walkUndeclared
	}
	sh.walksMu.Lock()
	if sh.walks == nil {
		sh.walks = make(map[walkKey]schema.Type)
	}
	if len(sh.walks) < maxWalks {
		sh.walks[k] = t
	}
	sh.walksMu.Unlock()
	if t == walkUndeclared {
		return 0, msg
	}
	return t, ""
}

// lookup returns the entry of any catalog tool, allowed or not.
func (c *Catalog) lookup(name string) *entry { return c.shared.tools[name] }

// PlanSchema returns the JSON Schema of the plan document (the shape Parse
// accepts), compiled once per catalog family. A model-backed planner sends
// it with its request.
func (c *Catalog) PlanSchema() (*schema.Schema, error) {
	sh := c.shared
	sh.planSchemaOnce.Do(func() {
		sh.planSchema, sh.planSchemaErr = schema.Compile("plan", planSchemaDoc())
	})
	return sh.planSchema, sh.planSchemaErr
}

// declarationSchema is safety.DeclarationSchema decoded.
func declarationSchema() any {
	var v any
	if err := json.Unmarshal([]byte(safety.DeclarationSchema), &v); err != nil {
		panic("plan: safety.DeclarationSchema is not JSON: " + err.Error())
	}
	return v
}

func planSchemaDoc() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type":                 "object",
		"required":             []any{"goal", "steps"},
		"additionalProperties": false,
		"properties": map[string]any{
			"goal": str,
			"steps": map[string]any{
				"type": "array",
				"items": map[string]any{
					"type":                 "object",
					"required":             []any{"id", "tool"},
					"additionalProperties": false,
					"properties": map[string]any{
						"id":          str,
						"tool":        str,
						"depends_on":  map[string]any{"type": "array", "items": str},
						"args":        map[string]any{"type": "object"},
						"declaration": declarationSchema(),
					},
				},
			},
		},
	}
}
