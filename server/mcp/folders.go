package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// load loads the flow folders of dirs with loader and returns the tools
// their flows can call (servedTools), noting each tool's gate and the
// workflow tools the flows' agents declare.
func (a *assembly) load(dirs []string, o *project.LoadOptions, loader func(string, *project.LoadOptions) (*project.Project, error)) ([]tool.Tool, error) {
	for _, dir := range dirs {
		flows, err := flowFolders(dir)
		if err != nil {
			return nil, err
		}
		for _, f := range flows {
			p, err := loader(f, o)
			if err != nil {
				return nil, err
			}
			a.projects = append(a.projects, p)
			a.paths = append(a.paths, f)
		}
	}
	tools, gates, err := servedTools(a.projects)
	if err != nil {
		return nil, err
	}
	a.gates, a.workflow = gates, map[string]bool{}
	for _, p := range a.projects {
		for _, pw := range p.Workflows() {
			a.workflow[pw.Tool] = true
		}
	}
	return tools, nil
}

// flowFolders returns dir when it holds a flow or is an agent folder
// (agent.yaml, served as its one-step flow: project.LoadAgent), else its
// subfolders that are, sorted; none at all is an error.
func flowFolders(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, project.FlowFile)); err == nil || project.IsAgentDir(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), project.FlowFile)); err == nil || project.IsAgentDir(filepath.Join(dir, e.Name())) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mcp: %s holds no %s nor %s, and none of its folders does: give a flow or agent folder, or a folder of them", dir, project.FlowFile, flow.AgentFile)
	}
	return out, nil
}

// servedTools are the tools served from projects: every tool each
// project's flow can call. A name two projects give to different tools is
// an error; the same declaration shared through one rein.yaml is served
// once. The gate decides every call of them: a tool's calls by the gate of
// each project that offers it (rein.yaml policy: joined with the flow's
// policy:, Project.CallGate), the most severe decision winning
// (safety.ByTool routes each call).
func servedTools(projects []*project.Project) ([]tool.Tool, map[string]safety.Gate, error) {
	var out []tool.Tool
	from := map[string]string{}
	gates := map[string]safety.Gate{}
	for _, p := range projects {
		g := p.CallGate(nil)
		for _, name := range p.Tools.Names() {
			t, _ := p.Tools.Lookup(name)
			if project.IsAgentTool(t) {
				continue // an agent its agents call: served as its own folder's workflow tool, when served
			}
			gates[name] = safety.Join(gates[name], g)
			if dir, dup := from[name]; dup {
				if dir == p.Dir {
					continue
				}
				prev, _ := lookupIn(projects, dir, name)
				if sameSpec(prev.Spec(), t.Spec()) {
					continue
				}
				return nil, nil, fmt.Errorf("tool %s is declared differently for %s and %s: rename one of them, or serve the folders separately", name, dir, p.Dir)
			}
			from[name] = p.Dir
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out, gates, nil
}

func lookupIn(projects []*project.Project, dir, name string) (tool.Tool, bool) {
	for _, p := range projects {
		if p.Dir == dir {
			return p.Tools.Lookup(name)
		}
	}
	return nil, false
}

func sameSpec(a, b tool.Spec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Effect == b.Effect && a.Idempotent == b.Idempotent &&
		string(a.InputSchema) == string(b.InputSchema) && string(a.OutputSchema) == string(b.OutputSchema)
}

// workflowTools are the workflow tools of the served flow folders: one
// <name>_workflow per folder of paths, its tasks in st, its flow loaded
// with load. Two flows of one name are an error.
func workflowTools(paths []string, st store.Store, load *project.LoadOptions) ([]tool.Tool, error) {
	var out []tool.Tool
	seen := map[string]string{}
	for _, path := range paths {
		w, err := workflowtool.New(path, &workflowtool.Options{Store: st, Load: load})
		if err != nil {
			return nil, fmt.Errorf("workflow tool of %s: %w", path, err)
		}
		if prev, dup := seen[w.Name()]; dup {
			return nil, fmt.Errorf("%s and %s both give the workflow tool %s: rename one flow, or serve the folders separately", prev, path, w.Name())
		}
		seen[w.Name()] = path
		out = append(out, w.Tool())
	}
	return out, nil
}

// withoutServedWorkflows drops from tools the workflow tools a flow's
// agents declare (workflow: FOLDER) when FOLDER is one of the served
// flow folders: that folder's own <name>_workflow (wf[k], served for
// paths[k]), the same tool, is served once. One of that name for another
// folder is an error.
func withoutServedWorkflows(tools, wf []tool.Tool, projects []*project.Project, paths []string) ([]tool.Tool, error) {
	folder := map[string]string{} // served workflow tool → its folder
	for k, w := range wf {
		if abs, err := filepath.Abs(paths[k]); err == nil {
			folder[w.Spec().Name] = abs
		}
	}
	drop := map[string]bool{}
	for _, p := range projects {
		for _, pw := range p.Workflows() {
			if _, served := folder[pw.Tool]; !served {
				continue
			}
			if folder[pw.Tool] != pw.Path {
				return nil, fmt.Errorf("%s: an agent's workflow tool %s drives %s, but the served flow folder %s gives a workflow tool of that name: serve the folders separately", p.Dir, pw.Tool, pw.Path, folder[pw.Tool])
			}
			drop[pw.Tool] = true
		}
	}
	return slices.DeleteFunc(tools, func(t tool.Tool) bool { return drop[t.Spec().Name] }), nil
}
