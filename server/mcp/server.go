package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// Options configure a Server; nil means the defaults.
type Options struct {
	// Name and Version describe the server to clients. Name defaults to
	// "rein".
	Name, Version string
	// Pipeline passes every call through the gate and the checks. Nil: a
	// pipeline with no gate (every call allowed).
	Pipeline *invoke.Pipeline
	// Recorder receives the gate's decisions and the call records. Nil:
	// none are kept.
	Recorder invoke.Recorder
	// Provenance says where a call's arguments came from, for the gate's
	// provenance rules. Nil: every leaf is inferred (safety.Inferred), as
	// the arguments of an MCP client — a model's host — are.
	Provenance func(spec *tool.Spec, args any) safety.Provenance
	// Redact hides secrets in every answer and error (their JSON text)
	// before it leaves the process; it must not add characters JSON
	// escapes. Nil: redact.Process().String, the secrets of the
	// environment.
	Redact func(string) string
}

// Server serves a fixed set of tools over MCP. It is safe for concurrent
// use: one Server may run on stdio and behind any number of HTTP sessions.
type Server struct {
	sdk      *sdk.Server
	pipeline *invoke.Pipeline
	recorder invoke.Recorder
	redact   func(string) string
	prov     func(*tool.Spec, any) safety.Provenance
	calls    atomic.Int64
}

// served is one tool with its compiled schemas.
type served struct {
	tool          tool.Tool
	spec          tool.Spec
	input, output invoke.Validator
}

// New returns a server for tools. It fails on a duplicate or empty name,
// on a schema that does not compile, and on an input schema that does not
// describe a JSON object (MCP passes arguments as an object); a tool
// without an input schema accepts any object.
func New(tools []tool.Tool, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	name := opts.Name
	if name == "" {
		name = "rein"
	}
	s := &Server{
		sdk:      sdk.NewServer(&sdk.Implementation{Name: name, Version: opts.Version}, nil),
		pipeline: opts.Pipeline,
		recorder: opts.Recorder,
		redact:   opts.Redact,
		prov:     opts.Provenance,
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
		s.sdk.AddTool(mt, s.handler(sv))
	}
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

// handler calls sv through the pipeline. Its error return is for the
// protocol only; the tool's own failures are results with IsError.
func (s *Server) handler(sv *served) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args any = map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return s.failure(fmt.Errorf("arguments of tool %s are not JSON: %w", sv.spec.Name, err)), nil
			}
		}
		session := ""
		if req.Session != nil {
			session = req.Session.ID()
		}
		// The idempotency key is "mcp[:session]/<tool>/<n>", n counting
		// this server's calls: stable for one call, different between calls.
		at := invoke.Position{RunID: "mcp", StepID: sv.spec.Name, Attempt: int(s.calls.Add(1))}
		if session != "" {
			at.RunID = "mcp:" + session
		}
		out, _, err := s.pipeline.Call(ctx, &invoke.Request{Tool: sv.tool, Spec: &sv.spec, Args: args,
			Provenance: s.prov(&sv.spec, args), Input: sv.input, Output: sv.output, At: at, Recorder: s.recorder})
		if err != nil {
			return s.failure(err), nil
		}
		return s.answer(out), nil
	}
}

// Handler returns the streamable-HTTP handler (one MCP session per
// client, all served by s), to mount at /mcp. A call is answered with one
// application/json body rather than an event stream: rein's tools send no
// progress notifications, and the round trip costs about half as much.
func (s *Server) Handler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{JSONResponse: true})
}

// Run serves one session over t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.sdk.Run(ctx, t)
}
