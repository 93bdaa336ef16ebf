package flow

import (
	"sort"
	"strings"

	"github.com/reinhq/rein/tool"
)

// resolveSchemas compiles the flow's schemas:, its inputs: and every step's
// output_schema.
func (d *decoder) resolveSchemas() {
	names := make([]string, 0, len(d.schemaNodes))
	for n := range d.schemaNodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := d.schemaNodes[n]
		if _, isMap := fieldsOf(f.value); !isMap {
			// a file path; resolved relative to the flow.
			path, ok := d.str(f, "")
			if !ok {
				continue
			}
			s, err := d.schemas.lookupFile(path, n)
			if err != nil {
				d.diags.add(posOf(f.value), "", "schemas.%s: %v", n, err)
				continue
			}
			d.schemas.byName[n] = s
			continue
		}
		if s := d.schemaField(f, n, ""); s != nil {
			d.schemas.byName[n] = s
		}
	}
	for n, s := range d.schemas.byName {
		d.flow.Schemas[n] = s
	}
	if d.inputsNode != nil {
		d.flow.Inputs = d.schemaField(field{key: "inputs", value: d.inputsNode}, "inputs", "")
	}
	for _, src := range d.srcs {
		if f, ok := src.fields["output_schema"]; ok {
			src.step.OutputSchema = d.schemaField(f, src.step.ID+" output_schema", src.step.ID)
		}
	}
}

// checkTargets checks that every tool and model a step names exists.
func (d *decoder) checkTargets() {
	for _, src := range d.srcs {
		s := src.step
		if s.Type == Tool && s.Tool != "" {
			d.checkTool(s.Tool, src.fields["tool"], s.ID)
		}
		switch s.Type {
		case Route:
			d.checkRoute(s, src, s.ID)
			if s.Model != "" {
				d.checkModel(s.Model, src.fields["model"], s.ID)
			}
		case Plan:
			d.checkPlan(s, src, s.ID)
			for _, t := range s.PlanSpec.Tools {
				d.checkTool(t, src.fields["tools"], s.ID)
			}
		case Agent:
			for _, t := range s.Agent.Tools {
				if t.Decl == nil && t.Workflow == "" && t.Agent == "" { // the loader makes workflow and agent tools
					d.checkToolAt(t.Name, t.Pos, s.ID)
				}
			}
			d.checkResponseHooks(s.Agent.Tools, s.OutputSchema, "step "+s.ID)
		}
		if s.Type == LLM || s.Type == Plan || s.Type == Agent {
			f, ok := src.fields["model"]
			if !ok {
				f = field{key: "model", keyPos: s.Pos, value: src.node}
			}
			d.checkModel(s.Model, f, s.ID)
		}
		if fb := s.Fallback; fb != nil {
			f := src.fields["fallback"]
			if fb.Tool != "" {
				d.checkTool(fb.Tool, f, s.ID)
			}
			if fb.Model != "" {
				if s.Type != LLM {
					d.diags.add(posOf(f.value), s.ID, "fallback.model needs an llm step (it reuses the step's prompt)")
				}
				d.checkModel(fb.Model, f, s.ID)
			}
		}
	}
}

func (d *decoder) checkTool(name string, f field, step string) {
	d.checkToolAt(name, posOf(f.value), step)
}

func (d *decoder) checkToolAt(name string, pos Pos, step string) {
	if _, ok := d.toolSpec(name); ok {
		return
	}
	known := d.toolNames()
	where := "none is declared: add it to the flow's tools: or a rein.yaml beside the flow"
	if len(known) > 0 {
		where = "known tools: " + strings.Join(known, ", ")
	}
	d.diags.add(pos, step, "unknown tool %q (%s)%s", name, where, didYouMean(name, known))
}

func (d *decoder) checkModel(name string, f field, step string) {
	d.checkModelAt(name, posOf(f.value), step)
}

func (d *decoder) checkModelAt(name string, pos Pos, step string) {
	if d.opts.Models != nil && d.opts.Models(name) {
		return
	}
	label := name
	if label == "" {
		label = "(default)"
	}
	d.diags.addCode(CodeModelNotConfigured, pos, step, "model %s is not configured: add it to rein.yaml models: (e.g. {provider: openai, model: gpt-4o-mini}), or answer it with a scripted model (a script.yaml beside the flow)", label)
}

// toolSpec resolves a tool name: the flow's own tools first, then Options.Tools.
func (d *decoder) toolSpec(name string) (tool.Spec, bool) {
	if t, ok := d.flow.Tools[name]; ok {
		return t.Spec(), true
	}
	if d.opts.Tools != nil {
		return d.opts.Tools(name)
	}
	return tool.Spec{}, false
}

func (d *decoder) toolNames() []string {
	var out []string
	for n := range d.flow.Tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// checkFallbacks checks fallback values against the step's schema and that
// skip and fallback have something to continue with.
func (d *decoder) checkFallbacks() {
	for _, src := range d.srcs {
		s := src.step
		// on a for_each step, a fallback fills one failed item's slot:
		// it is checked against the schema of one item.
		schema := d.outputSchema(s)
		if s.HasFallbackValue && schema != nil {
			if err := schema.Validate(s.FallbackValue); err != nil {
				d.diags.add(posOf(src.fields["fallback_value"].value), s.ID, "fallback_value %v", err)
			}
		}
		if fb := s.Fallback; fb != nil && fb.HasValue && schema != nil {
			if err := schema.Validate(fb.Value); err != nil {
				d.diags.add(posOf(src.fields["fallback"].value), s.ID, "fallback.value %v", err)
			}
		}
		switch s.OnError {
		case Skip:
			if !s.HasFallbackValue && schema != nil {
				if err := schema.Validate(nil); err != nil {
					d.diags.add(posOf(src.fields["on_error"].value), s.ID, "on_error: skip continues with fallback_value, and this step has none (null %v)", err)
				}
			}
		case Fallback:
			if s.Fallback == nil && !s.HasFallbackValue {
				d.diags.add(posOf(src.fields["on_error"].value), s.ID, "on_error: fallback needs fallback: (a value, tool or model) or fallback_value")
			}
		}
		if s.Fallback != nil && s.OnError != Fallback {
			d.diags.add(src.fields["fallback"].keyPos, s.ID, "fallback: only runs with on_error: fallback (on_error is %s)", s.OnError)
		}
	}
}

// outputSchema is the step's declared output_schema, else its tool's, which
// then becomes the step's (so the engine checks tool outputs against it).
func (d *decoder) outputSchema(s *Step) *Schema {
	if s.OutputSchema != nil || s.Type != Tool {
		return s.OutputSchema
	}
	if t, ok := d.flow.Tools[s.Tool]; ok {
		s.OutputSchema = t.OutputSchema
	} else if spec, ok := d.toolSpec(s.Tool); ok && len(spec.OutputSchema) > 0 {
		if sch, err := CompileSchema(s.Tool+" output_schema", spec.OutputSchema); err == nil {
			s.OutputSchema = sch
		}
	}
	return s.OutputSchema
}
