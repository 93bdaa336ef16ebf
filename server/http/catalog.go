package http

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
)

// FlowInfo is a served flow or agent (GET /v1/flows): its name, kind
// (flow or agent), folder, and the problems that keep it from loading.
type FlowInfo struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Dir      string            `json:"dir"`
	Problems []flow.Diagnostic `json:"problems,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// catalog is what a server starts: the loaded projects by name, and every
// folder with its problems.
type catalog struct {
	info     []FlowInfo
	projects map[string]*project.Project
	kinds    map[string]string
}

// folders expands dir into the flow and agent folders it is or holds.
func folders(dir string) ([]string, error) {
	if isFlowDir(dir) || project.IsAgentDir(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && (isFlowDir(sub) || project.IsAgentDir(sub)) {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("serve %s: it holds no %s or %s, and none of its folders does: give a flow or agent folder, or a folder of them", dir, project.FlowFile, flow.AgentFile)
	}
	return out, nil
}

func isFlowDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, project.FlowFile))
	return err == nil
}

// loadCatalog loads every folder of dirs. A folder that fails keeps its
// problems; two served flows of one name are an error.
func loadCatalog(ctx context.Context, dirs []string, load func(string) (*project.Project, error)) (*catalog, error) {
	c := &catalog{projects: map[string]*project.Project{}, kinds: map[string]string{}}
	for _, d := range dirs {
		subs, err := folders(d)
		if err != nil {
			_ = c.close()
			return nil, err
		}
		for _, sub := range subs {
			if err := ctx.Err(); err != nil {
				_ = c.close()
				return nil, err
			}
			kind := "flow"
			if project.IsAgentDir(sub) {
				kind = "agent"
			}
			info := FlowInfo{Name: filepath.Base(sub), Kind: kind, Dir: sub}
			p, err := load(sub)
			if err != nil {
				var fe *flow.Error
				if errors.As(err, &fe) {
					info.Problems = fe.Diagnostics
				} else {
					info.Error = err.Error()
				}
				c.info = append(c.info, info)
				continue
			}
			info.Name = p.Flow.Name
			if _, dup := c.projects[info.Name]; dup {
				_ = p.Close()
				_ = c.close()
				return nil, fmt.Errorf("serve: two folders serve a flow named %s (%s and another): rename one", info.Name, sub)
			}
			info.Problems = p.Flow.Warnings
			c.projects[info.Name], c.kinds[info.Name] = p, kind
			c.info = append(c.info, info)
		}
	}
	sort.SliceStable(c.info, func(i, j int) bool { return c.info[i].Name < c.info[j].Name })
	return c, nil
}

func (c *catalog) close() error {
	var errs []error
	for _, p := range c.projects {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
