package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/model"
)

// callFields are the fields of one entry of tool_calls.
var callFields = []string{"id", "name", "args", "raw_args"}

// toolCalls parses a reply's tool_calls: a non-empty list, at most
// model.MaxToolCalls long, of {name, args | raw_args, id?}. args is a
// mapping answered as compact JSON (keys sorted), raw_args a string
// answered as is; neither means {}. Ids, when given, are unique in the
// reply.
func (p *scriptParser) toolCalls(f *ast.MappingValueNode, what string) []model.ToolCall {
	sub := what + ".tool_calls"
	seq, ok := f.Value.(*ast.SequenceNode)
	if !ok {
		p.addf(f.Value, "%s must be a list of calls such as {name: get_weather, args: {city: Paris}}, got %s", sub, kind(f.Value))
		return nil
	}
	switch n := len(seq.Values); {
	case n == 0:
		p.addf(f.Value, "%s is empty: list at least one call (for a final answer, use output: or raw:)", sub)
		return nil
	case n > model.MaxToolCalls:
		p.addf(f.Value, "%s lists %d calls; a reply may hold at most %d (model.MaxToolCalls)", sub, n, model.MaxToolCalls)
		return nil
	}
	calls := make([]model.ToolCall, 0, len(seq.Values))
	ids := map[string]int{}
	for j, item := range seq.Values {
		at := fmt.Sprintf("%s[%d]", sub, j)
		fields := p.mapping(item, at, callFields)
		if fields == nil {
			continue
		}
		var tc model.ToolCall
		before := len(p.problems)
		if nf, ok := fields["name"]; ok {
			if tc.Name = p.str(nf, at); tc.Name == "" && len(p.problems) == before {
				p.addf(nf.Value, "%s: name must not be empty", at)
			}
		} else {
			p.addf(item, "%s: missing `name:` (the tool the model calls)", at)
		}
		if idf, ok := fields["id"]; ok {
			b := len(p.problems)
			tc.ID = p.str(idf, at)
			switch first, dup := ids[tc.ID]; {
			case tc.ID == "" && len(p.problems) == b:
				p.addf(idf.Value, "%s: id must not be empty (leave it out to have one made)", at)
			case dup:
				p.addf(idf.Value, "%s: id %q is also %s[%d]'s; ids pair results with calls, so they must be unique", at, tc.ID, sub, first)
			case tc.ID != "":
				ids[tc.ID] = j
			}
		}
		tc.Args = p.callArgs(fields, at)
		calls = append(calls, tc)
	}
	return calls
}

// callArgs is a call's arguments text: args as compact JSON, raw_args as
// written, {} without either.
func (p *scriptParser) callArgs(fields map[string]*ast.MappingValueNode, at string) string {
	af, hasArgs := fields["args"]
	rf, hasRaw := fields["raw_args"]
	switch {
	case hasArgs && hasRaw:
		p.addf(rf.Key, "%s: give args or raw_args, not both", at)
		return ""
	case hasRaw:
		return p.str(rf, at)
	case !hasArgs:
		return "{}"
	}
	switch af.Value.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		p.addf(af.Value, "%s: args must be a mapping (the call's arguments object), got %s; to send other text, use raw_args:", at, kind(af.Value))
		return ""
	}
	v := p.output(af, at)
	if v == nil {
		return ""
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		p.addf(af.Value, "%s: args cannot be written as JSON: %v", at, err)
		return ""
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
