package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// Server serves a fixed set of tools over MCP: the tools of the flow
// folders it loaded, Options.Tools, and runs_list/runs_show. It is safe
// for concurrent use: one Server may run on stdio and behind any number of
// HTTP sessions at once.
type Server struct {
	sdk      *sdk.Server
	pipeline *invoke.Pipeline
	recorder invoke.Recorder
	redact   func(string) string
	prov     func(*tool.Spec, any) safety.Provenance
	// ledger journals the served calls; calls counts them (each call's
	// attempt, so its key is unique).
	ledger *ledger
	calls  atomic.Int64
	// secret signs the request states of held calls; answers holds the
	// keys of those answered (each answer is taken once).
	secret  []byte
	answers sync.Map
	// routes says, per tool, how a person may run it instead (the
	// refusal of a call the host's user could not approve).
	routes map[string]string
	names  []string
	// projects are the folders' projects, closed by Close.
	projects []*project.Project
}

// config is what newServer needs beyond the tools: the assembly in New
// builds it.
type config struct {
	name, version string
	// pipeline passes every call through the gate and the checks.
	pipeline *invoke.Pipeline
	// recorder receives the gate's decisions and the call records; nil:
	// none are kept.
	recorder invoke.Recorder
	// prov says where a call's arguments came from; nil: every leaf is
	// inferred (safety.Inferred), as a model's host's are.
	prov func(spec *tool.Spec, args any) safety.Provenance
	// redact hides secrets in every answer and error (their JSON text);
	// it must not add characters JSON escapes. Nil:
	// redact.Process().String, the secrets of the environment.
	redact func(string) string
	// ledger journals the calls; nil: a ledger of no store (keys only).
	ledger *ledger
	// routes says, per tool, how a person may run it instead.
	routes map[string]string
}

// served is one tool with its compiled schemas.
type served struct {
	tool          tool.Tool
	spec          tool.Spec
	input, output invoke.Validator
}

// newServer returns a server of tools. It fails on a duplicate or empty
// name, on a schema that does not compile, and on an input schema that
// does not describe a JSON object (MCP passes arguments as an object); a
// tool without an input schema accepts any object.
func newServer(tools []tool.Tool, cfg config) (*Server, error) {
	name := cfg.name
	if name == "" {
		name = DefaultName
	}
	s := &Server{
		sdk:      sdk.NewServer(&sdk.Implementation{Name: name, Version: cfg.version}, nil),
		pipeline: cfg.pipeline,
		recorder: cfg.recorder,
		redact:   cfg.redact,
		prov:     cfg.prov,
		ledger:   cfg.ledger,
		routes:   cfg.routes,
		secret:   newSecret(),
	}
	if s.ledger == nil {
		s.ledger = newLedger(nil, nil, nil)
	}
	if s.prov == nil {
		s.prov = func(_ *tool.Spec, args any) safety.Provenance { return safety.Inferred(args) }
	}
	if s.pipeline == nil {
		s.pipeline = &invoke.Pipeline{}
	}
	if s.redact == nil {
		s.redact = redact.Process().String
	}
	seen := map[string]bool{}
	for _, t := range tools {
		sv, mt, err := describe(t)
		if err != nil {
			return nil, err
		}
		if seen[mt.Name] {
			return nil, fmt.Errorf("mcp: tool %q is given twice: every served tool needs its own name", mt.Name)
		}
		seen[mt.Name] = true
		s.names = append(s.names, mt.Name)
		s.sdk.AddTool(mt, s.handler(sv))
	}
	sort.Strings(s.names)
	return s, nil
}

// describe compiles t's schemas and builds its MCP description.
func describe(t tool.Tool) (*served, *sdk.Tool, error) {
	spec := t.Spec()
	if spec.Name == "" {
		return nil, nil, fmt.Errorf("mcp: a tool has no name")
	}
	sv := &served{tool: t, spec: spec}
	in := spec.InputSchema
	if in == nil {
		in = json.RawMessage(`{"type":"object"}`)
	} else {
		var head struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(in, &head); err != nil || head.Type != "object" {
			return nil, nil, fmt.Errorf(`mcp: tool %s: its input schema must have "type": "object" (MCP passes arguments as an object)`, spec.Name)
		}
		c, err := schema.Compile(spec.Name+" input_schema", in)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp: tool %s: %w", spec.Name, err)
		}
		sv.input = c
	}
	mt := &sdk.Tool{Name: spec.Name, Description: spec.Description, InputSchema: in, Annotations: annotations(spec)}
	if spec.OutputSchema != nil {
		c, err := schema.Compile(spec.Name+" output_schema", spec.OutputSchema)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp: tool %s: %w", spec.Name, err)
		}
		sv.output = c
		mt.OutputSchema = spec.OutputSchema
	}
	return sv, mt, nil
}

// annotations states a tool's declared effect as MCP hints.
func annotations(spec tool.Spec) *sdk.ToolAnnotations {
	readOnly := spec.Effect == "" || spec.Effect == tool.EffectNone || spec.Effect == tool.EffectRead
	destructive := spec.Effect == tool.EffectDestructive
	open := spec.Effect == tool.EffectExternal || spec.Effect == tool.EffectDestructive
	return &sdk.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive, OpenWorldHint: &open, IdempotentHint: spec.Idempotent}
}

// Run serves one session over t (an SDK transport: sdk.StdioTransport,
// one end of sdk.NewInMemoryTransports, …) until the client disconnects or
// ctx ends. On a process's own stdin and stdout, ServeStdio is the better
// choice: it answers malformed lines instead of ending the session.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.sdk.Run(ctx, t)
}

// Tools returns the names of the served tools, sorted, as a client lists
// them; the slice is the caller's.
func (s *Server) Tools() []string { return slices.Clone(s.names) }

// Close releases what the folders' projects hold (a project loaded with
// LoadOptions.Record writes its cassette) and marks the run that journals
// the served calls succeeded. Call it once the server stopped serving. It
// does not close the Client.
func (s *Server) Close() error {
	var errs []error
	for _, p := range s.projects {
		errs = append(errs, p.Close())
	}
	s.projects = nil
	errs = append(errs, s.ledger.close())
	return errors.Join(errs...)
}
