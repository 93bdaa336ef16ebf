package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/model"
)

// replyFields lists the fields a reply may have, in the order messages name them.
var replyFields = []string{"step", "decision", "turn", "contains", "model", "output", "raw", "route", "reason", "plan", "tool_calls", "error", "message", "tokens", "delay"}

// answerFields are the fields of which a reply gives exactly one.
var answerFields = []string{"output", "raw", "error", "route", "plan", "tool_calls"}

// oneOfAnswers is answerFields for messages.
const oneOfAnswers = "output, raw, error, route, plan or tool_calls"

// scriptParser collects the problems of one script.
type scriptParser struct {
	problems []Problem
}

func (p *scriptParser) addf(n ast.Node, format string, args ...any) {
	line, col := yamlnode.Start(n)
	p.problems = append(p.problems, Problem{Line: line, Column: col, Message: fmt.Sprintf(format, args...)})
}

// parseScript turns a script into replies, or lists what is wrong with it.
func parseScript(data []byte) (replies []Reply, problems []Problem) {
	p := &scriptParser{}
	defer func() {
		// The YAML library is fuzzed upstream; this keeps a crash in it from
		// taking the process down with a user's script.
		if r := recover(); r != nil {
			replies, problems = nil, []Problem{{Line: 1, Column: 1, Message: fmt.Sprintf("YAML parser failed: %v", r)}}
		}
	}()
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "a script", MaxBytes: MaxFileBytes, NoAnchors: true})
	if err != nil {
		return nil, []Problem{yamlProblem(err)}
	}
	var docs []*ast.DocumentNode
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, []Problem{{Line: 1, Column: 1, Message: "script is empty: expected a top-level `replies:` list"}}
	}
	for _, d := range docs[1:] {
		p.addf(d.Body, "a script is one YAML document; remove this second document")
	}
	replies = p.top(docs[0].Body)
	slices.SortStableFunc(p.problems, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return replies, p.problems
}

func (p *scriptParser) top(body ast.Node) []Reply {
	if _, ok := body.(*ast.SequenceNode); ok {
		p.addf(body, "a script is a mapping with a `replies:` list; indent this list under `replies:`")
		return nil
	}
	fields := p.mapping(body, "the script", []string{"replies"})
	if fields == nil {
		return nil
	}
	list, ok := fields["replies"]
	if !ok {
		p.addf(body, "missing `replies:` list")
		return nil
	}
	seq, ok := list.Value.(*ast.SequenceNode)
	if !ok {
		p.addf(list.Value, "replies must be a list, got %s", kind(list.Value))
		return nil
	}
	replies := make([]Reply, 0, len(seq.Values))
	for i, item := range seq.Values {
		if r, ok := p.reply(i, item); ok {
			replies = append(replies, r)
		}
	}
	return replies
}

// mapping returns the fields of a mapping node, reporting non-mappings,
// duplicate keys and keys not in known. It returns nil for a non-mapping.
func (p *scriptParser) mapping(n ast.Node, what string, known []string) map[string]*ast.MappingValueNode {
	values, ok := yamlnode.Entries(n)
	if !ok {
		p.addf(n, "%s must be a mapping, got %s", what, kind(n))
		return nil
	}
	fields := make(map[string]*ast.MappingValueNode, len(values))
	for _, mv := range values {
		key, ok := yamlnode.String(mv.Key)
		if !ok {
			p.addf(mv.Key, "%s has a key that is not a string", what)
			continue
		}
		if first, dup := fields[key]; dup {
			line, _ := yamlnode.Start(first.Key)
			p.addf(mv.Key, "duplicate field %q in %s (first at line %d)", key, what, line)
			continue
		}
		if !slices.Contains(known, key) {
			p.addf(mv.Key, "unknown field %q in %s (known: %s)", key, what, strings.Join(known, ", "))
			continue
		}
		fields[key] = mv
	}
	return fields
}

func (p *scriptParser) reply(i int, item ast.Node) (Reply, bool) {
	what := fmt.Sprintf("replies[%d]", i)
	fields := p.mapping(item, what, replyFields)
	if fields == nil {
		return Reply{}, false
	}
	before := len(p.problems)
	var r Reply
	if f, ok := fields["step"]; ok {
		r.Step = p.str(f, what)
		if r.Step == "" && len(p.problems) == before {
			p.addf(f.Value, "%s: step must not be empty", what)
		}
	} else {
		p.addf(item, "%s: missing `step:` (the step id this reply answers)", what)
	}
	if f, ok := fields["decision"]; ok {
		switch d := p.str(f, what); d {
		case "route", "plan", "agent", "llm", "review", "summarize", "guardrail":
			r.Decision = d
		case "":
			if len(p.problems) == before {
				p.addf(f.Value, "%s: decision must be route, plan, agent, review, summarize, guardrail or llm, got \"\"", what)
			}
		default:
			p.addf(f.Value, "%s: decision must be route, plan, agent, review, summarize, guardrail or llm, got %q", what, d)
		}
	}
	if f, ok := fields["turn"]; ok {
		n, isInt := f.Value.(*ast.IntegerNode)
		var v int
		if !isInt || yaml.NodeToValue(n, &v) != nil || v < 1 {
			p.addf(f.Value, "%s: turn must be an agent turn number from 1, got %s", what, describe(f.Value))
		} else if r.Decision != "" && r.Decision != "agent" {
			p.addf(f.Key, "%s: turn matches a turn of an agent loop, but decision is %s", what, r.Decision)
		}
		r.Turn = v
	}
	if f, ok := fields["contains"]; ok {
		r.Contains = p.str(f, what)
	}
	if f, ok := fields["model"]; ok {
		r.Model = p.str(f, what)
	}
	p.answer(&r, fields, item, what)
	if f, ok := fields["tokens"]; ok {
		r.Tokens = p.tokens(f, what)
	}
	if f, ok := fields["delay"]; ok {
		r.Delay = p.delay(f, what)
	}
	return r, len(p.problems) == before
}

// answer fills what the reply answers: exactly one of output, raw, error,
// route and plan, with what goes along (message, reason).
func (p *scriptParser) answer(r *Reply, fields map[string]*ast.MappingValueNode, item ast.Node, what string) {
	var given []string
	for _, k := range answerFields {
		if _, ok := fields[k]; ok {
			given = append(given, k)
		}
	}
	switch len(given) {
	case 0:
		p.addf(item, "%s: give exactly one of %s", what, oneOfAnswers)
	case 1:
	default:
		p.addf(fields[given[1]].Key, "%s: give exactly one of %s, not %s", what, oneOfAnswers, strings.Join(given, " and "))
	}
	if f, ok := fields["output"]; ok {
		r.Output = p.output(f, what)
	}
	if f, ok := fields["raw"]; ok {
		s := p.str(f, what)
		r.Raw = &s
	}
	if f, ok := fields["error"]; ok {
		switch kind := p.str(f, what); kind {
		case string(fault.Transient), string(fault.Business):
			r.Error = fault.Class(kind)
		case "":
		default:
			p.addf(f.Value, "%s: error must be transient or business, got %q (for a format error, use raw: with text that is not valid JSON)", what, kind)
		}
	}
	if f, ok := fields["message"]; ok {
		r.Message = p.str(f, what)
		if _, isErr := fields["error"]; !isErr {
			p.addf(f.Key, "%s: message is only for error replies (add error: transient or error: business)", what)
		}
	}
	p.route(r, fields, what)
	if f, ok := fields["plan"]; ok {
		r.Plan = p.plan(f, what)
		if r.Decision != "" && r.Decision != "plan" {
			p.addf(f.Key, "%s: a plan reply answers the planner, but decision is %s (drop decision: or say decision: plan)", what, r.Decision)
		}
	}
	if f, ok := fields["tool_calls"]; ok {
		r.ToolCalls = p.toolCalls(f, what)
		if r.Decision == "route" || r.Decision == "plan" {
			p.addf(f.Key, "%s: tool_calls answer a turn that offers tools, but decision is %s, which offers none (drop decision: or say decision: agent)", what, r.Decision)
		}
	}
}

// route fills a route reply: route: NAME and reason: TEXT go together.
func (p *scriptParser) route(r *Reply, fields map[string]*ast.MappingValueNode, what string) {
	rf, hasRoute := fields["route"]
	why, hasReason := fields["reason"]
	if hasRoute {
		before := len(p.problems)
		if r.Route = p.str(rf, what); r.Route == "" && len(p.problems) == before {
			p.addf(rf.Value, "%s: route must not be empty", what)
		}
		if !hasReason {
			p.addf(rf.Key, "%s: route needs a reason: (why the request belongs to the route; the router rejects a route without one)", what)
		}
		if r.Decision != "" && r.Decision != "route" {
			p.addf(rf.Key, "%s: a route reply answers the router, but decision is %s (drop decision: or say decision: route)", what, r.Decision)
		}
	}
	if hasReason {
		before := len(p.problems)
		if r.Reason = p.str(why, what); r.Reason == "" && len(p.problems) == before {
			p.addf(why.Value, "%s: reason must not be empty", what)
		}
		if !hasRoute {
			p.addf(why.Key, "%s: reason is only for route replies (add route: NAME)", what)
		}
	}
}

// plan returns a plan reply's object.
func (p *scriptParser) plan(f *ast.MappingValueNode, what string) any {
	switch f.Value.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		p.addf(f.Value, "%s: plan must be a mapping (a plan object such as {goal: ..., steps: [...]}), got %s", what, kind(f.Value))
		return nil
	}
	return p.output(f, what)
}

// str returns a string field, reporting anything that is not a string.
func (p *scriptParser) str(f *ast.MappingValueNode, what string) string {
	s, ok := yamlnode.String(f.Value)
	if !ok {
		p.addf(f.Value, "%s: %s must be a string, got %s", what, keyName(f), kind(f.Value))
	}
	return s
}

func (p *scriptParser) output(f *ast.MappingValueNode, what string) any {
	var v any
	if err := yaml.NodeToValue(f.Value, &v); err != nil {
		p.addf(f.Value, "%s: %s: %s", what, keyName(f), yamlMessage(err))
		return nil
	}
	if _, err := json.Marshal(v); err != nil {
		p.addf(f.Value, "%s: %s cannot be written as JSON: %v", what, keyName(f), err)
		return nil
	}
	return v
}

func (p *scriptParser) tokens(f *ast.MappingValueNode, what string) *model.Usage {
	sub := what + ".tokens"
	fields := p.mapping(f.Value, sub, []string{"in", "out"})
	if fields == nil {
		return nil
	}
	var u model.Usage
	for _, t := range []struct {
		name string
		dst  *int
	}{{"in", &u.In}, {"out", &u.Out}} {
		name := t.name
		mv, ok := fields[name]
		if !ok {
			continue
		}
		n, ok := mv.Value.(*ast.IntegerNode)
		var v int
		if !ok || yaml.NodeToValue(n, &v) != nil || v < 0 {
			p.addf(mv.Value, "%s: %s must be a non-negative integer, got %s", sub, name, describe(mv.Value))
			continue
		}
		*t.dst = v
	}
	return &u
}

func (p *scriptParser) delay(f *ast.MappingValueNode, what string) time.Duration {
	s, ok := yamlnode.String(f.Value)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d < 0 {
		p.addf(f.Value, "%s: delay must be a non-negative duration such as 50ms or 2s, got %s", what, describe(f.Value))
		return 0
	}
	return d
}

func keyName(f *ast.MappingValueNode) string {
	s, _ := yamlnode.String(f.Key)
	return s
}

// kind names a node's YAML type for messages ("integer", "mapping", ...).
func kind(n ast.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Type() {
	case ast.NullType:
		return "null"
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.LiteralType:
		return "a string"
	}
	return strings.ToLower(n.Type().String())
}

// describe quotes a scalar's source text, or names a collection's kind.
func describe(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType, ast.SequenceType, ast.NullType:
		return kind(n)
	}
	return fmt.Sprintf("%q", n.GetToken().Value)
}

// yamlProblem turns a go-yaml error into a positioned problem.
func yamlProblem(err error) Problem {
	var le *yamlnode.LimitError
	if errors.As(err, &le) {
		return Problem{Line: le.Line, Column: le.Col, Message: le.Message}
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		line, col := yamlnode.TokenPos(ye.GetToken())
		return Problem{Line: line, Column: col, Message: ye.GetMessage()}
	}
	return Problem{Line: 1, Column: 1, Message: err.Error()}
}

// yamlMessage is a go-yaml error's message without its position prefix and
// source excerpt (the problem carries the position).
func yamlMessage(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return ye.GetMessage()
	}
	msg, _, _ := bytes.Cut([]byte(err.Error()), []byte("\n"))
	return string(msg)
}
