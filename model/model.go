// Package model is the port through which rein talks to language models.
// A Model turns messages into text (usually JSON) or tool calls, plus token
// usage; errors it
// returns are classed with package fault (transient, business, format) so the
// engine, not the model, decides what to do about them. Adapters live in
// subpackages: model/openai (OpenAI and every OpenAI-compatible server),
// model/anthropic, model/scripted (offline, deterministic) and
// model/cassette (record and replay); model/provider builds them from
// configuration, and model/modeltest is the conformance suite every
// provider adapter passes. Decide is the one structured-decision primitive
// llm steps, the router and the planner share.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrNotConfigured is wrapped by the error of a model name nothing
// answers ("model "x" is not configured: …").
var ErrNotConfigured = errors.New("is not configured")

// Role is who wrote a message.
type Role string

// Message roles.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	// Tool is the result of one tool call, sent back to the model: its
	// ToolCallID names the call, Content is the observation.
	Tool Role = "tool"
)

// Message is one turn of a conversation. An assistant message may carry the
// tool calls the model asked for (beside or instead of text); a Tool message
// answers one of them. Results of parallel calls follow the assistant
// message as consecutive Tool messages, in any order.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an Assistant message asked for, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the ID of the call a Tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a Tool message whose Content reports that the call
	// failed (Anthropic's is_error; OpenAI has no such flag, the content
	// says it).
	IsError bool `json:"is_error,omitempty"`
}

// Request is one call to a model.
type Request struct {
	// Model is the model name the step asked for (e.g. "gpt-4o-mini").
	Model    string
	Messages []Message
	// Schema, when set, is the JSON Schema the answer must satisfy; adapters
	// may pass it to the provider (structured output). The engine validates
	// the answer either way.
	Schema json.RawMessage
	// RunID, StepID and Attempt identify the call; adapters may use them
	// (the scripted model matches replies by StepID).
	RunID   string
	StepID  string
	Attempt int
	// Turn is the agent loop's turn (from 1) a Decision "agent" request
	// asks for; 0 otherwise. The scripted model matches replies on it.
	Turn int
	// SubRun, for a turn of an agent's sub-run (an agent called as a tool,
	// or handed the conversation), is the key of the call it runs in and
	// the agent's tool ("<call key>/<tool>"); "" for the step's own loop.
	// Aside marks a sub-run that is not the conversation (an agent called
	// as a tool, and everything under one): a surface that prints the
	// conversation as written leaves its text out (trace.Delta).
	SubRun string
	Aside  bool
	// Corrective is true for the one corrective retry after a format error.
	Corrective bool
	// Decision says which primitive asks: "" for an llm step, "route" for
	// the semantic router, "plan" for the planner, "agent" for a turn of
	// the agent loop. Adapters may ignore it; the scripted model and
	// cassettes match on it.
	Decision string
	// Tools are the tools the model may call (native tool calling). With
	// none, the model answers with text only. See CheckRequest for the
	// rules they follow.
	Tools []ToolDef
	// ToolChoice says whether and which tool the model must call; the zero
	// value leaves it to the model (auto) and sends nothing.
	ToolChoice ToolChoice
}

// Prompt returns the concatenated user content of the request: the user
// messages and the tool results (observations), in order.
func (r *Request) Prompt() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == User || m.Role == Tool {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// Usage is the token count of one call.
type Usage struct {
	In  int `json:"in"`
	Out int `json:"out"`
}

// Response is a model's answer: text, tool calls, or both (text that
// accompanies the calls). A Response with no ToolCalls is a final answer.
type Response struct {
	Text string
	// ToolCalls are the calls the model asks for, in the order it gave
	// them; several are parallel calls. Adapters pass names and arguments
	// through as the provider sent them (an unknown tool, arguments that
	// are not JSON): the caller validates them. Every call names a tool and
	// has an ID unique within the Response, and there are at most
	// MaxToolCalls (see CheckToolCalls).
	ToolCalls []ToolCall
	Usage     Usage
	// Model is the model that actually answered, when the provider says.
	Model string
}

// Model is the port. A Response may come back together with an error when
// tokens were spent on a reply that is unusable (truncated, refused).
// Generate must honour ctx (deadline and cancellation) and
// return errors classed with package fault: transient for timeouts, 429, 5xx
// and network errors; business for other refusals. Implementations must be
// safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Func adapts a function to Model.
type Func func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f.
func (f Func) Generate(ctx context.Context, req *Request) (*Response, error) { return f(ctx, req) }

// Registry maps model names to Models. A registry with a fallback answers
// every name (the scripted stand-in registers itself that way). The zero
// value is empty and ready to use; it is not safe for concurrent mutation,
// so fill it before handing it to an engine.
type Registry struct {
	byName   map[string]Model
	fallback Model
}

// Register binds name to m, replacing any earlier binding.
func (r *Registry) Register(name string, m Model) {
	if r.byName == nil {
		r.byName = make(map[string]Model)
	}
	r.byName[name] = m
}

// SetFallback makes m answer every name that has no binding of its own.
func (r *Registry) SetFallback(m Model) { r.fallback = m }

// Has reports whether name resolves.
func (r *Registry) Has(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.byName[name]
	return ok || r.fallback != nil
}

// Lookup returns the Model for name, or an error saying how to configure one.
func (r *Registry) Lookup(name string) (Model, error) {
	if r != nil {
		if m, ok := r.byName[name]; ok {
			return m, nil
		}
		if r.fallback != nil {
			return r.fallback, nil
		}
	}
	return nil, fmt.Errorf("model %q %w: configure it in rein.yaml models:, name one as provider/model, or answer it with a scripted model", name, ErrNotConfigured)
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
