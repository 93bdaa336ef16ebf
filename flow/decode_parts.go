package flow

import (
	"errors"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/yamlnode"
)

func (d *decoder) posErr(err error, step string) {
	var pe *posError
	if errors.As(err, &pe) {
		d.diags.add(pe.pos, step, "%s", pe.msg)
		return
	}
	d.diags.add(Pos{1, 1}, step, "%v", err)
}

// expr compiles an expression field, locating compile errors inside it.
func (d *decoder) expr(f field, step string) *expression.Program {
	src, ok := d.str(f, step)
	if !ok {
		return nil
	}
	p, err := expression.Compile(src)
	if err != nil {
		var ee *expression.Error
		if errors.As(err, &ee) {
			d.diags.add(posAt(f.value, ee.Offset), step, "%s: %s", f.key, ee.Msg)
		} else {
			d.diags.add(posOf(f.value), step, "%s: %v", f.key, err)
		}
		return nil
	}
	return p
}

// template compiles one template string held by node n.
func (d *decoder) template(n ast.Node, text, step, what string) *template.Template {
	t, err := template.Parse(text)
	if err != nil {
		var se *template.SyntaxError
		if errors.As(err, &se) {
			d.diags.add(posAt(n, se.Offset), step, "%s: %s", what, se.Msg)
		} else {
			d.diags.add(posOf(n), step, "%s: %v", what, err)
		}
		return nil
	}
	return t
}

// args compiles an args tree (every string leaf is a template).
func (d *decoder) args(n ast.Node, step, what string) *template.Value {
	v, err := toValue(n)
	if err != nil {
		d.posErr(err, step)
		return nil
	}
	tv, errs := template.ParseValue(v)
	for _, e := range errs {
		leaf := nodeAt(n, e.Pointer)
		var se *template.SyntaxError
		if errors.As(e.Err, &se) {
			d.diags.add(posAt(leaf, se.Offset), step, "%s%s: %s", what, e.Pointer, se.Msg)
		} else {
			d.diags.add(posOf(leaf), step, "%s%s: %v", what, e.Pointer, e.Err)
		}
	}
	if len(errs) > 0 {
		return nil
	}
	return tv
}

// nodeAt follows an RFC 6901 pointer into n, stopping at the deepest node found.
func nodeAt(n ast.Node, pointer string) ast.Node {
	if pointer == "" {
		return n
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if fields, ok := fieldsOf(n); ok {
			found := false
			for _, f := range fields {
				if f.key == tok {
					n, found = f.value, true
					break
				}
			}
			if !found {
				return n
			}
			continue
		}
		if seq, ok := n.(*ast.SequenceNode); ok {
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(seq.Values) {
				return n
			}
			n = seq.Values[i]
			continue
		}
		return n
	}
	return n
}

func (d *decoder) decodeBackoff(s *Step, fl field, label string) {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "backoff must be a mapping with initial, max and multiplier, not %s", yamlnode.Kind(fl.value))
		return
	}
	for _, f := range fields {
		switch f.key {
		case "initial", "max":
			t, ok := d.duration(f, label)
			if !ok {
				continue
			}
			if t <= 0 {
				d.diags.add(posOf(f.value), label, "backoff.%s must be positive", f.key)
				continue
			}
			if f.key == "initial" {
				s.Backoff.Initial = t
			} else {
				s.Backoff.Max = t
			}
		case "multiplier":
			if m, ok := d.number(f, label); ok {
				if m < 1 || m > 10 {
					d.diags.add(posOf(f.value), label, "backoff.multiplier must be between 1 and 10")
				} else {
					s.Backoff.Multiplier = m
				}
			}
		default:
			d.unknownField(f, label, "backoff", backoffFields)
		}
	}
	if s.Backoff.Max < s.Backoff.Initial {
		d.diags.add(posOf(fl.value), label, "backoff.max (%s) is below backoff.initial (%s)", s.Backoff.Max, s.Backoff.Initial)
	}
}

func (d *decoder) decodeRepeat(s *Step, fl field, label string) {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "repeat must be a mapping with until and max, not %s", yamlnode.Kind(fl.value))
		return
	}
	r := &Repeat{}
	hasMax := false
	for _, f := range fields {
		switch f.key {
		case "until":
			r.Until = d.expr(f, label)
		case "max":
			n, ok := d.integer(f, label)
			hasMax = true
			if ok && (n < 1 || n > MaxRepeat) {
				d.diags.add(posOf(f.value), label, "repeat.max must be between 1 and %d, not %d", MaxRepeat, n)
			} else if ok {
				r.Max = n
			}
		default:
			d.unknownField(f, label, "repeat", repeatFields)
		}
	}
	if !hasMax {
		d.diags.add(posOf(fl.value), label, "repeat needs max: every loop is bounded")
	}
	if _, ok := fieldByKey(fields, "until"); !ok {
		d.diags.add(posOf(fl.value), label, "repeat needs until: (an expression over the step's output)")
	}
	s.Repeat = r
}

func (d *decoder) decodeFallback(s *Step, fl field, label string) {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "fallback must be a mapping with value:, tool: or model:, not %s (for a plain value use fallback_value)", yamlnode.Kind(fl.value))
		return
	}
	fb := &FallbackSpec{}
	kinds := 0
	for _, f := range fields {
		switch f.key {
		case "value":
			v, err := toValue(f.value)
			if err != nil {
				d.posErr(err, label)
				continue
			}
			fb.Value, fb.HasValue = v, true
			kinds++
		case "tool":
			fb.Tool, _ = d.str(f, label)
			kinds++
		case "model":
			fb.Model, _ = d.str(f, label)
			kinds++
		case "args":
			fb.Args = d.args(f.value, label, "fallback.args")
		case "prompt_template":
			if v, ok := d.str(f, label); ok {
				fb.Prompt = d.template(f.value, v, label, "fallback.prompt_template")
			}
		default:
			d.unknownField(f, label, "fallback", fallbackFields)
		}
	}
	if kinds != 1 {
		d.diags.add(posOf(fl.value), label, "fallback needs exactly one of value:, tool: or model:")
	}
	if fb.Tool == "" && fb.Args != nil {
		d.diags.add(posOf(fl.value), label, "fallback.args go with fallback.tool")
	}
	if fb.Model == "" && fb.Prompt != nil {
		d.diags.add(posOf(fl.value), label, "fallback.prompt_template goes with fallback.model")
	}
	s.Fallback = fb
}

func fieldByKey(fields []field, key string) (field, bool) {
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}
