package temporal

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
)

// Flows are the programs a worker can run: loaded projects, by the hash
// of their flow (engine.FlowHash), each with the engine that carries out
// its attempts. A run names the hash it was started with (Start.FlowHash);
// a worker that does not hold it fails the workflow task, which Temporal
// retries until a worker that holds it takes it, so a run never goes on
// under another version of its flow.
type Flows struct {
	// Store, when set before flows are added, is the run store the
	// flows' engines keep what outlives one run in (engine.Config.Store):
	// the tenants' daily spend reserved before each model call
	// (rein.yaml budgets:) and the registry of invalidated resources. It
	// holds no run of Temporal's: the workflow history is the run's record.
	Store store.Store
	mu    sync.RWMutex
	byKey map[string]*entry
}

type entry struct {
	p *project.Project
	e *engine.Engine
}

// NewFlows returns an empty set of flows.
func NewFlows() *Flows { return &Flows{byKey: map[string]*entry{}} }

// Add adds a loaded project; a second project of the same flow hash is
// the same program, and is ignored. A worker runs many runs of it, each
// on its own: its script (a scripted model, script.yaml) answers every
// run from the whole script (scripted.Model.ByRun), as a local rein run,
// a process of its own, does.
func (fs *Flows) Add(p *project.Project) string {
	h := engine.FlowHash(p.Flow)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, ok := fs.byKey[h]; !ok {
		if p.Script != nil {
			p.Script.ByRun()
		}
		fs.byKey[h] = &entry{p: p, e: wire.Engine(p, engine.Config{Store: fs.Store})}
	}
	return h
}

// Load loads each folder (project.Load) and adds it. Every folder is
// tried; the error names each that failed.
func (fs *Flows) Load(dirs []string, opts *project.LoadOptions) error {
	var bad []string
	for _, d := range dirs {
		p, err := project.Load(d, opts)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", d, err))
			continue
		}
		fs.Add(p)
	}
	if len(bad) > 0 {
		return fmt.Errorf("temporal: %d flow folder(s) did not load:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	return nil
}

// Names are the flows' names, sorted, once each.
func (fs *Flows) Names() []string {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	var out []string
	for _, e := range fs.byKey {
		out = append(out, e.p.Flow.Name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Holds reports whether the worker holds the flow of hash h
// (engine.FlowHash): whether it can run a run that pinned it.
func (fs *Flows) Holds(h string) bool {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	_, ok := fs.byKey[h]
	return ok
}

// get is the entry of flow hash h.
func (fs *Flows) get(h string) (*entry, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	e, ok := fs.byKey[h]
	if !ok {
		names := make([]string, 0, len(fs.byKey))
		for _, e := range fs.byKey {
			names = append(names, e.p.Flow.Name)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("temporal: this worker does not hold the flow of hash %s (it holds %s): start a worker with the run's flow folder (rein worker --temporal … DIR)", h, strings.Join(names, ", "))
	}
	return e, nil
}
