package scripted

import (
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/model"
)

// Reply is one canned answer of a script. Exactly one of Output, Raw,
// Error, Route, Plan and ToolCalls says what the reply answers; when a
// Reply built in Go sets more than one, Error wins over ToolCalls,
// ToolCalls over Raw, Raw over Route, Route over Plan and Plan over Output
// (a nil Output with nothing else answers the JSON text "null").
type Reply struct {
	// Step is the step id the reply answers (model.Request.StepID).
	Step string
	// Decision, when not empty, must match the request's Decision: "route",
	// "plan" or "agent", or "llm" for a request whose Decision is "" (an
	// llm step).
	Decision string
	// Turn, when not 0, must equal the request's Turn: the reply answers
	// that turn of an agent loop only, so a run resumed in another process
	// (after an approval) gets the reply of the turn it is at.
	Turn int
	// Contains, when not empty, must occur in the request's Prompt().
	Contains string
	// Model, when not empty, must equal the request's Model.
	Model string
	// Output is answered as compact JSON text (encoding/json, map keys
	// sorted, HTML characters not escaped).
	Output any
	// Raw, when not nil, is answered as is.
	Raw *string
	// Route, when not empty, is answered as {"route":Route,"reason":Reason},
	// a semantic router's choice.
	Route  string
	Reason string
	// Plan, when not nil, is answered as its compact JSON, like Output: the
	// plan object a planner proposes ({"goal": …, "steps": […]}). It is not
	// validated here; the planner does that.
	Plan any
	// ToolCalls, when not empty, answers with these tool calls
	// (model.Response.ToolCalls) and no text: a turn of an agent loop. A
	// call without an ID gets "call_<reply>_<call>" (the reply's and the
	// call's index), so ids are unique in a script and the same on every
	// run. Args are answered as they are, JSON or not.
	ToolCalls []model.ToolCall
	// Error, when not empty, makes the call fail with this class; scripts
	// may only say fault.Transient or fault.Business.
	Error fault.Class
	// Message is the failure's message; it defaults to "scripted <class>
	// error".
	Message string
	// Tokens, when not nil, is the usage to report instead of the estimate
	// (in = ceil(len(prompt)/4), out = ceil(len(text)/4)).
	Tokens *model.Usage
	// Delay is how long to wait before answering; the wait honours ctx.
	Delay time.Duration
}

// Problem is one thing wrong with a script, at a 1-based line and column.
type Problem struct {
	Line    int
	Column  int
	Message string
}

// ParseError is every problem Parse found in one script. Its Error method
// prints one "file:line:col: message" line per problem.
type ParseError struct {
	File     string
	Problems []Problem
}

// Error lists the problems, one per line.
func (e *ParseError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, p.Line, p.Column, p.Message)
	}
	return b.String()
}

// Parse reads a script. filename is used only in messages ("<script>" when
// empty). Unknown fields, wrong types, a reply without a step or without
// exactly one of output, raw, error, route, plan and tool_calls, an error
// kind other than transient or business, a decision other than route,
// plan, agent or llm, a route without a reason (or a reason without a
// route), a plan that is not a mapping, a route, plan or tool_calls reply
// whose decision says otherwise, tool calls without a name, with both args
// and raw_args, with args that are not a mapping, with a repeated id, an
// empty tool_calls list or one longer than model.MaxToolCalls, and bad
// tokens or delays are all rejected; the error is a *ParseError listing
// every problem found.
func Parse(data []byte, filename string) (*Model, error) {
	if filename == "" {
		filename = "<script>"
	}
	replies, problems := parseScript(data)
	if len(problems) > 0 {
		return nil, &ParseError{File: filename, Problems: problems}
	}
	return New(replies), nil
}

// MaxFileBytes bounds a script (script.yaml).
const MaxFileBytes = 4 << 20

// Load reads and parses the script at path.
func Load(path string) (*Model, error) {
	data, err := yamlnode.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	return Parse(data, path)
}
