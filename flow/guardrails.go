package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/internal/yamlnode"
)

var guardrailFields = []string{"name", "regex", "deny", "schema", "check", "judge", "on_trip"}

// What a tripped guardrail does (on_trip:).
const (
	// OnTripStop stops the run with a guardrail error (the default).
	OnTripStop = "stop"
	// OnTripAsk parks the run for a person: approve goes on as if the
	// guardrail had not tripped, reject is the guardrail error.
	OnTripAsk = "ask"
)

// MaxGuardrailPattern bounds a guardrail's regex (Go's regexp runs in time
// linear in its input; the bound keeps the compiled program small).
const MaxGuardrailPattern = 1024

// AgentGuardrail is one entry of an agent's guardrails: (input: checks
// the task before the first model call, output: the final answer before
// it is accepted). It has exactly one rule: Regex trips when it matches
// the text; Deny when the text holds one of its phrases (case
// insensitive); Schema when the value (the answer's JSON value, or the
// text as a string) breaks it; Check, an expression over text and value
// (the flow expression language), when it is false; Judge, an isolated
// classifier call of the agent's model with Judge as its instruction
// (package agent makes it: Trips passes it), when the model says so.
type AgentGuardrail struct {
	Name   string
	Input  bool
	Regex  *regexp.Regexp
	Deny   []string
	Schema *Schema
	Check  *expression.Program
	Judge  string
	// Ask: on_trip: ask — a trip waits for a person's decision instead of
	// stopping the run.
	Ask bool
	Pos Pos
}

// Side is "input" or "output".
func (g *AgentGuardrail) Side() string {
	if g.Input {
		return "input"
	}
	return "output"
}

// Kind is the guardrail's rule: regex, deny, schema, check or judge.
func (g *AgentGuardrail) Kind() string {
	switch {
	case g.Regex != nil:
		return "regex"
	case len(g.Deny) > 0:
		return "deny"
	case g.Schema != nil:
		return "schema"
	case g.Check != nil:
		return "check"
	case g.Judge != "":
		return "judge"
	}
	return ""
}

// Trips says why text (v its value: the answer's JSON value under an
// output schema; nil reads text as JSON when it is, else as the string)
// trips g, "" when it passes. An error is an expression that cannot be
// decided, which trips it too (fail closed) at the caller's choice.
func (g *AgentGuardrail) Trips(ctx context.Context, text string, v any) (string, error) {
	if v == nil {
		if json.Unmarshal([]byte(text), &v) != nil {
			v = text
		}
	}
	switch {
	case g.Regex != nil:
		if loc := g.Regex.FindStringIndex(text); loc != nil {
			return fmt.Sprintf("the text matches %s at byte %d", g.Regex, loc[0]), nil
		}
	case len(g.Deny) > 0:
		low := strings.ToLower(text)
		for _, d := range g.Deny {
			if strings.Contains(low, strings.ToLower(d)) {
				return fmt.Sprintf("the text holds the denied phrase %q", d), nil
			}
		}
	case g.Schema != nil:
		if err := g.Schema.Validate(v); err != nil {
			return fmt.Sprintf("the value breaks the guardrail's schema: %v", err), nil
		}
	case g.Check != nil:
		ok, err := g.Check.EvalContext(ctx, map[string]any{"text": text, "value": v})
		if err != nil {
			return "", fmt.Errorf("guardrail %s: check: %w", g.Name, err)
		}
		if !ok {
			return "its check is false", nil
		}
	}
	return "", nil
}

// decodeGuardrails reads guardrails: {input: [...], output: [...]}.
func (d *decoder) decodeGuardrails(fl field, label string) []*AgentGuardrail {
	sides, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "guardrails must be a mapping of input: and output:, each a list of guardrails, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	var out []*AgentGuardrail
	seen := map[string]bool{}
	for _, side := range sides {
		if side.key != "input" && side.key != "output" {
			d.unknownField(side, label, "guardrails", []string{"input", "output"})
			continue
		}
		seq, ok := side.value.(*ast.SequenceNode)
		if !ok {
			d.diags.add(posOf(side.value), label, "guardrails: %s must be a list of guardrails ({name, regex|deny|schema|check}), not %s", side.key, yamlnode.Kind(side.value))
			continue
		}
		for _, item := range seq.Values {
			g := d.decodeGuardrail(item, side.key == "input", label)
			if g == nil {
				continue
			}
			if seen[g.Name] {
				d.diags.add(g.Pos, label, "guardrails: %q is named twice; give each guardrail its own name", g.Name)
			}
			seen[g.Name] = true
			out = append(out, g)
		}
	}
	return out
}

func (d *decoder) decodeGuardrail(item ast.Node, input bool, label string) *AgentGuardrail {
	fields, ok := fieldsOf(item)
	if !ok {
		d.diags.add(posOf(item), label, "a guardrail is a mapping of name: and one of regex:, deny:, schema:, check:, not %s", yamlnode.Kind(item))
		return nil
	}
	g := &AgentGuardrail{Input: input, Pos: posOf(item)}
	rules := 0
	for _, f := range fields {
		switch f.key {
		case "name":
			if v, ok := d.str(f, label); ok {
				if !idPattern.MatchString(v) {
					d.diags.add(posOf(f.value), label, "guardrail name %q must start with a letter or _ and hold only letters, digits, _ and -", v)
				}
				g.Name = v
			}
		case "regex":
			rules++
			if v, ok := d.str(f, label); ok {
				if len(v) > MaxGuardrailPattern {
					d.diags.add(posOf(f.value), label, "guardrail regex is %d bytes, over the limit of %d", len(v), MaxGuardrailPattern)
					continue
				}
				re, err := regexp.Compile(v)
				if err != nil {
					d.diags.add(posOf(f.value), label, "guardrail regex: %v (Go regexp syntax, RE2)", err)
					continue
				}
				g.Regex = re
			}
		case "deny":
			rules++
			if list, _, ok := d.strList(f, label); ok {
				for _, p := range list {
					if strings.TrimSpace(p) == "" {
						d.diags.add(posOf(f.value), label, "guardrail deny: a phrase is empty")
					}
				}
				if len(list) == 0 {
					d.diags.add(posOf(f.value), label, "guardrail deny: list at least one phrase")
				}
				g.Deny = list
			}
		case "schema":
			rules++
			g.Schema = d.schemaField(f, "guardrail schema", label)
		case "check":
			rules++
			g.Check = d.expr(f, label)
		case "judge":
			rules++
			if v, ok := d.str(f, label); ok {
				if strings.TrimSpace(v) == "" {
					d.diags.add(posOf(f.value), label, "guardrail judge: say what the model should refuse (its instruction)")
				}
				g.Judge = v
			}
		case "on_trip":
			if v, ok := d.str(f, label); ok {
				switch v {
				case OnTripStop:
				case OnTripAsk:
					g.Ask = true
				default:
					d.diags.add(posOf(f.value), label, "guardrail on_trip: %q is neither %s (stop the run with a guardrail error) nor %s (ask a person)", v, OnTripStop, OnTripAsk)
				}
			}
		default:
			d.unknownField(f, label, "a guardrail", guardrailFields)
		}
	}
	if g.Name == "" {
		d.diags.add(g.Pos, label, "a guardrail needs name: (it names the guardrail in the error when it trips)")
	}
	if rules != 1 {
		d.diags.add(g.Pos, label, "guardrail %s: give exactly one of regex:, deny:, schema:, check: and judge:, not %d", g.Name, rules)
	}
	return g
}
