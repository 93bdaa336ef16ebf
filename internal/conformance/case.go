package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/reinhq/rein/project"
)

// LedgerEnv names the ledger file the tools of the table append to, one
// line "TOOL IDEMPOTENCY_KEY" per execution. Run sets it for each case; a
// worker process a Runner starts inherits it.
const LedgerEnv = "REIN_CONFORMANCE_LEDGER"

// Case is one folder of the table.
type Case struct {
	// Name is the folder's name; runs of the case take it as their id.
	Name string
	// Dir holds flow.yaml, input.json and, when the flow calls a model,
	// script.yaml.
	Dir string
	// Config is the table's rein.yaml (its tools).
	Config string
	// Input is input.json.
	Input json.RawMessage
	// Want is expected.json.
	Want Expected
}

// Expected is a case's expected.json: what every backend must show.
type Expected struct {
	// Kill, when set, runs the case in a worker process that is killed
	// mid-step (Runner.StartKilled).
	Kill *Kill `json:"kill,omitempty"`
	// Decisions are sent in order, each once the run waits.
	Decisions []Decision `json:"decisions,omitempty"`
	// Status is the run's final status; Class its error's class, if any.
	Status string `json:"status"`
	Class  string `json:"class,omitempty"`
	// Steps is every step's final status ("pending": never started).
	Steps map[string]string `json:"steps"`
	// Ledger is each tool's execution count at the end (absent: 0).
	Ledger map[string]int `json:"ledger"`
	// Usage, when set, is the run's spend at the end (a case whose spend
	// does not depend on timing: no worker killed mid-call).
	Usage *Usage `json:"usage,omitempty"`
}

// Kill says when the worker running the case is killed: once the ledger
// counts at least these executions (the calls are in flight, blocked
// while the ledger's .block file exists).
type Kill struct {
	InFlight map[string]int `json:"in_flight"`
}

// Decision is a person's answer to a waiting step, and what the run shows
// before it: the steps it waits on and the ledger.
type Decision struct {
	Pending []string       `json:"pending"`
	Ledger  map[string]int `json:"ledger"`
	Step    string         `json:"step"`
	// Action is approve, reject or settle.
	Action  string          `json:"action"`
	Comment string          `json:"comment,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
}

// LoadOptions are the options every backend loads the case's project
// with: the table's rein.yaml, the script beside the flow.
func (c *Case) LoadOptions() *project.LoadOptions {
	return &project.LoadOptions{Config: c.Config}
}

// Load loads the case's project with LoadOptions.
func (c *Case) Load() (*project.Project, error) {
	return project.Load(c.Dir, c.LoadOptions())
}

// InputValue is the case's input decoded.
func (c *Case) InputValue() (any, error) {
	var v any
	if err := json.Unmarshal(c.Input, &v); err != nil {
		return nil, fmt.Errorf("%s: input.json: %w", c.Dir, err)
	}
	return v, nil
}

// TestdataDir is the table's folder (this package's testdata), found from
// this file's path so that the temporal module's tests find it too.
func TestdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Cases reads every case of the table, sorted by name.
func Cases() ([]*Case, error) {
	root := TestdataDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []*Case
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := readCase(root, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func readCase(root, name string) (*Case, error) {
	dir := filepath.Join(root, name)
	c := &Case{Name: name, Dir: dir, Config: filepath.Join(root, "rein.yaml")}
	in, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		return nil, err
	}
	c.Input = in
	want, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(want))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.Want); err != nil {
		return nil, fmt.Errorf("%s/expected.json: %w", dir, err)
	}
	if c.Want.Status == "" || len(c.Want.Steps) == 0 {
		return nil, fmt.Errorf("%s/expected.json: status and steps are required", dir)
	}
	return c, nil
}
