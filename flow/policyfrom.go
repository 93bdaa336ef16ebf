package flow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// PolicySource is the policy of a real project that a policy test decides
// with instead of retyping it: the gate of its rein.yaml policy: joined
// with a flow's own policy: (as a run joins them), and the tools rein.yaml
// declares, so a case may name a tool (tool: send_refund) and get its
// declared effect.
type PolicySource struct {
	// Path is what was loaded: a folder (its rein.yaml and flow.yaml), a
	// rein.yaml or a flow.yaml.
	Path  string
	Gate  safety.Gate
	Tools map[string]tool.Spec
}

// LoadPolicySource reads the policy and tools of path: a folder holding
// rein.yaml and/or flow.yaml, or one such file (a file named other than
// flow.yaml is read as a rein.yaml).
func LoadPolicySource(path string) (*PolicySource, error) {
	src := &PolicySource{Path: path, Tools: map[string]tool.Spec{}}
	cfgPath, flowPath := path, ""
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("policy source %s: %w", path, err)
	} else if fi.IsDir() {
		cfgPath, flowPath = filepath.Join(path, "rein.yaml"), filepath.Join(path, "flow.yaml")
	} else if filepath.Base(path) == "flow.yaml" {
		cfgPath, flowPath = "", path
	}
	var gates []safety.Gate
	found := false
	if cfgPath != "" {
		if cfg, err := LoadConfig(cfgPath); err == nil {
			found = true
			if cfg.Policy != nil {
				gates = append(gates, cfg.Policy.Policy())
			}
			for name, d := range cfg.Tools {
				s := tool.Spec{Name: name, Description: d.Description}
				d.ApplyTo(&s)
				src.Tools[name] = s
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if flowPath != "" {
		p, err := loadFlowPolicy(flowPath)
		if err == nil {
			found = true
			if p != nil {
				gates = append(gates, p.Policy())
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if !found {
		return nil, fmt.Errorf("policy source %s: no rein.yaml or flow.yaml there to take the rules from", path)
	}
	src.Gate = safety.Join(gates...)
	return src, nil
}

// loadFlowPolicy reads only the policy: of a flow file (the rest of the
// flow — steps, models — is not needed to decide calls).
func loadFlowPolicy(path string) (*PolicyDecl, error) {
	data, err := yamlnode.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	d := &decoder{diags: diagnostics{file: path}, flow: &Flow{}}
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "flow", MaxBytes: MaxFileBytes})
	if err != nil {
		d.syntaxError(err)
		return nil, d.result()
	}
	var p *PolicyDecl
	if len(file.Docs) > 0 && file.Docs[0].Body != nil {
		if fields, ok := fieldsOf(file.Docs[0].Body); ok {
			if f, ok := fieldByKey(fields, "policy"); ok {
				p = d.decodePolicy(f)
			}
		}
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return p, nil
}
