package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

func newMCPCmd(s *streams) *cobra.Command {
	var l loadFlags
	var db dbFlag
	cmd := &cobra.Command{
		Use:   "mcp DIR...",
		Short: "Serve the tools of flow folders over MCP on stdio",
		Long: `Serve over the Model Context Protocol, on stdin and stdout (newline-delimited
JSON-RPC), so an MCP-capable agent host can call rein's tools.

DIR is a flow folder (it holds flow.yaml) or a folder of flow folders. Served:
one workflow tool per flow, <name>_workflow, whose actions (start, submit,
submit_from_source, prepare_delivery, status, cancel) drive the flow's tasks
in the run store named by --db (rein tool does the same from a shell); every
tool the flows can call (their rein.yaml's and their own tools: and the tools
of the MCP servers their rein.yaml names), each through the policy gate (the
rein.yaml policy: and flow policy: of every folder that offers it; refusals are
also written to stderr) and its schemas; and the read-only runs_list and
runs_show over --db. A tool error is an MCP tool error whose text and structured content are the same JSON object
({error_type, message, retryable}, and a workflow tool's pointer and problems).

Nothing but JSON-RPC is written to stdout; messages go to stderr.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var projects []*project.Project
			var paths []string
			defer func() {
				for _, p := range projects {
					p.Close()
				}
			}()
			// The store opens once the flows loaded, or before, when their
			// agents declare workflow tools (workflow:): those are made as
			// the flows load, their tasks runs of the store.
			lazy := &lazyStore{db: &db}
			defer lazy.close(s)
			l.workflow = lazy.workflows(cmd.Context(), l.trustedToolsOnly)
			for _, dir := range args {
				flows, err := flowFolders(dir)
				if err != nil {
					return usageErr("%v", err)
				}
				for _, f := range flows {
					p, err := l.load(s, f)
					if err != nil {
						return err
					}
					projects = append(projects, p)
					paths = append(paths, f)
				}
			}
			tools, gate, err := servedTools(projects)
			if err != nil {
				return usageErr("%v", err)
			}
			st, err := lazy.open(cmd.Context())
			if err != nil {
				return err
			}
			wf, err := workflowTools(paths, st, l.loadOptions())
			if err != nil {
				return usageErr("%v", err)
			}
			workflow := map[string]bool{}
			for k, w := range wf { // a workflow tool is decided by its flow's gate too
				gate[w.Spec().Name] = safety.Join(gate[w.Spec().Name], projects[k].CallGate(nil))
				workflow[w.Spec().Name] = true
			}
			tools, err = withoutServedWorkflows(tools, wf, projects, paths)
			if err != nil {
				return usageErr("%v", err)
			}
			for _, p := range projects { // the workflow tools agents declare
				for _, pw := range p.Workflows() {
					workflow[pw.Tool] = true
				}
			}
			tools = append(wf, tools...)
			reader, err := runs.New(st, nil)
			if err != nil {
				return usageErr("--db: %v", err)
			}
			tools = append(tools, mcp.RunsTools(reader)...)
			// Each project's redactor knows the environment's secrets and
			// its own rein.yaml secrets:.
			hide := func(text string) string {
				for _, p := range projects {
					text = p.Redactor().String(text)
				}
				return text
			}
			// The host's model wrote every argument (inferred), but a
			// workflow tool's action only drives its task, whose steps
			// meet the gate with their own provenance: rules naming the
			// workflow tool decide the action itself.
			prov := func(spec *tool.Spec, args any) safety.Provenance {
				if workflow[spec.Name] {
					return nil
				}
				return safety.Inferred(args)
			}
			srv, err := mcp.New(tools, &mcp.Options{Version: readBuildInfo().short(), Redact: hide, Provenance: prov,
				Pipeline: &invoke.Pipeline{Gate: safety.ByTool(gate)}, Recorder: gateLog{w: s.err, cmd: "rein mcp", hide: hide}})
			if err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(s.err, "rein mcp: serving %d tools on stdio\n", len(tools))
			// The protocol goes to the raw streams: the CLI's stdout
			// writer escapes and redacts each write, which could alter a
			// frame. The server hides secrets in each answer before it is
			// encoded instead.
			return srv.ServeStdio(cmd.Context(), s.rawIn, s.rawOut)
		},
	}
	l.register(cmd)
	db.register(cmd)
	return cmd
}

// workflowTools are the workflow tools `rein mcp` serves: one
// <name>_workflow per flow folder (package bridge), its tasks in st. Two
// flows of one name are an error.
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

// servedTools are the tools `rein mcp` serves from projects: every tool
// each project's flow can call. A name two projects
// give to different tools is an error; the same declaration shared
// through one rein.yaml is served once. The gate decides every call of
// them: a tool's calls by the gate of each project that offers it
// (rein.yaml policy: joined with the flow's policy:, Project.CallGate),
// the most severe decision winning (safety.ByTool routes each call).
func servedTools(projects []*project.Project) ([]tool.Tool, map[string]safety.Gate, error) {
	var out []tool.Tool
	from := map[string]string{}
	gates := map[string]safety.Gate{}
	for _, p := range projects {
		g := p.CallGate(nil)
		for _, name := range p.Tools.Names() {
			t, _ := p.Tools.Lookup(name)
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

// flowFolders returns dir when it holds a flow, else its subfolders that
// do, sorted; none at all is an error.
func flowFolders(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, project.FlowFile)); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), project.FlowFile)); err == nil {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mcp: %s holds no %s, and none of its folders does: give a flow folder or a folder of flow folders", dir, project.FlowFile)
	}
	return out, nil
}
