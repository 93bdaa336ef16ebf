package workflowtool

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

// AdapterFunc turns a source step's upstream outputs (JSON values keyed by
// step id; "input" holds the task's input when the step is a root) into
// the step's output. It must be deterministic and honour ctx; its errors
// are classed with package fault (unclassified counts as business).
type AdapterFunc func(ctx context.Context, upstream map[string]any) (any, error)

var (
	adaptersMu sync.RWMutex
	adapters   = map[string]tool.Tool{}
)

// RegisterAdapter makes fn the Go adapter called name for every workflow
// of this process (rein.yaml adapters: of the same name take precedence).
// It panics on an empty name or a nil fn, like http.Handle; registering a
// name again replaces the adapter.
func RegisterAdapter(name string, fn AdapterFunc) {
	if name == "" || fn == nil {
		panic("bridge: RegisterAdapter needs a name and a function")
	}
	t := tool.Func(tool.Spec{Name: name, Description: "adapter " + name, Effect: tool.EffectNone, Idempotent: true},
		func(ctx context.Context, args any) (any, error) {
			m, _ := args.(map[string]any)
			return fn(ctx, m)
		})
	adaptersMu.Lock()
	adapters[name] = t
	adaptersMu.Unlock()
}

// goAdapter returns the Go adapter called name, or nil.
func goAdapter(name string) tool.Tool {
	adaptersMu.RLock()
	defer adaptersMu.RUnlock()
	return adapters[name]
}

// bindAdapters returns the adapter of each source step of f: those of
// the rein.yaml at configPath ("" for none) first, then the Go ones. A
// source step whose adapter is neither is an error naming every such step.
func bindAdapters(f *flow.Flow, configPath string) (map[string]tool.Tool, error) {
	var decls map[string]*flow.ToolDecl
	if configPath != "" {
		cfg, err := flow.LoadConfig(configPath)
		if err != nil {
			return nil, err
		}
		decls = cfg.Adapters
	}
	out := map[string]tool.Tool{}
	var missing []string
	for _, s := range f.Steps {
		if s.Type != flow.Source {
			continue
		}
		if d, ok := decls[s.Adapter]; ok {
			t, err := project.ExecTool(d)
			if err != nil {
				return nil, fmt.Errorf("adapter %s: %w", s.Adapter, err)
			}
			out[s.Adapter] = t
			continue
		}
		if t := goAdapter(s.Adapter); t != nil {
			out[s.Adapter] = t
			continue
		}
		missing = append(missing, fmt.Sprintf("step %s: unknown adapter %q", s.ID, s.Adapter))
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%s: register it with workflowtool.RegisterAdapter or declare it in rein.yaml adapters: (NAME: {command: [...]})", strings.Join(missing, "; "))
	}
	return out, nil
}
