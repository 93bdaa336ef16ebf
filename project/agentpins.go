package project

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/yamlnode"
)

// Pinned agent folders. A run pins its own flow text (an agent run: the
// flow written from its agent.yaml) and files; the agent folders its
// agents call as tools or hand the conversation to are loaded again from
// their folders on resume, so the run pins each one's digest
// (RunMeta.Agents): a resume whose folder reads otherwise is refused,
// naming the folder and both digests, instead of continuing with other
// definitions than the run started with.

// PinnedAgent is an agent folder a run's agents call as a tool or hand
// the conversation to (nested ones too).
type PinnedAgent struct {
	// Path is the agent folder, absolute.
	Path string `json:"path"`
	// SHA256 is the hex sha256 of its definitions when the run started
	// (agentDigest).
	SHA256 string `json:"sha256"`
}

// agentDigest is the digest of the definitions of the agent folder dir as
// sp loaded it: its agent.yaml, the files its flow read (schemas,
// prompts) and its rein.yaml with the files that read (tools, models,
// policy), each named.
func agentDigest(dir string, sp *Project) (string, error) {
	h := sha256.New()
	put := func(name string, b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(name))))
		h.Write([]byte(name))
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	data, err := yamlnode.ReadFile(filepath.Join(dir, flow.AgentFile), flow.MaxFileBytes)
	if err != nil {
		return "", err
	}
	put(flow.AgentFile, data)
	for _, name := range slices.Sorted(maps.Keys(sp.Flow.Files)) {
		put(name, sp.Flow.Files[name])
	}
	if sp.ConfigPath != "" {
		_, files, err := flow.LoadConfigFiles(sp.ConfigPath)
		if err != nil {
			return "", err
		}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			put(name, files[name])
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pinAgent adds the agent folder dir, loaded as sp, and the folders sp
// pinned in turn, to p's pinned agents (each folder once).
func (p *Project) pinAgent(dir string, sp *Project) error {
	sum, err := agentDigest(dir, sp)
	if err != nil {
		return fmt.Errorf("agent %s: %w", dir, err)
	}
	for _, a := range append([]PinnedAgent{{Path: dir, SHA256: sum}}, sp.agents...) {
		if !slices.ContainsFunc(p.agents, func(b PinnedAgent) bool { return b.Path == a.Path }) {
			p.agents = append(p.agents, a)
		}
	}
	return nil
}

// Agents lists the agent folders the project's agents call as tools or
// hand the conversation to, nested ones too, with their digests.
func (p *Project) Agents() []PinnedAgent { return slices.Clone(p.agents) }

// samePinnedAgents checks that a resumed run's agent folders (now) hold
// the definitions it started with (pinned).
func samePinnedAgents(pinned, now []PinnedAgent) error {
	for _, a := range pinned {
		i := slices.IndexFunc(now, func(n PinnedAgent) bool { return n.Path == a.Path })
		switch {
		case i < 0:
			return fmt.Errorf("its agents called the agent folder %s, which its flow no longer names", a.Path)
		case now[i].SHA256 != a.SHA256:
			return fmt.Errorf("the agent folder %s changed since the run started (its agent.yaml, prompts or rein.yaml: sha256 %s, now %s): put the folder back as it was to resume the run, or cancel it (rein runs cancel)",
				a.Path, shortSum(a.SHA256), shortSum(now[i].SHA256))
		}
	}
	return nil
}

// shortSum is the first 12 characters of a digest for a message; a pin
// read back from a damaged run record may be shorter (and is shown whole).
func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// SpendModels are the models a run of p prices its model calls by (its
// tenants' cost_per_day): its rein.yaml models:, then, for a name that
// declares none, those of the agent folders its agents call or hand the
// conversation to (nested ones too, the first folder's for a name two
// declare), whose model calls are the run's. Nil when none is declared.
// The map is the caller's to read, never to change.
func (p *Project) SpendModels() map[string]*flow.ModelDecl {
	var own map[string]*flow.ModelDecl
	if p.config != nil {
		own = p.config.Models
	}
	if len(p.subModels) == 0 {
		return own
	}
	out := maps.Clone(p.subModels)
	maps.Copy(out, own)
	return out
}

// addSubModels adds the models sp prices its calls by to p's models of
// sub-agents, where p has none of that name yet.
func (p *Project) addSubModels(sp *Project) {
	for name, d := range sp.SpendModels() {
		if _, ok := p.subModels[name]; ok {
			continue
		}
		if p.subModels == nil {
			p.subModels = map[string]*flow.ModelDecl{}
		}
		p.subModels[name] = d
	}
}
