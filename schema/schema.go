package schema

import (
	"bytes"
	_ "embed"
)

var (
	//go:embed flow.v1.json
	flowJSON []byte
	//go:embed rein.v1.json
	configJSON []byte
	//go:embed agent.v1.json
	agentJSON []byte
	//go:embed plan.v1.json
	planJSON []byte
)

// Flow returns the JSON Schema of the flow format (v1), as the bytes of
// schema/flow.v1.json. Each call returns a fresh copy the caller may keep
// or change.
func Flow() []byte { return bytes.Clone(flowJSON) }

// Config returns the JSON Schema of rein.yaml (v1), as the bytes of
// schema/rein.v1.json. Each call returns a fresh copy the caller may keep
// or change.
func Config() []byte { return bytes.Clone(configJSON) }

// Agent returns the JSON Schema of agent.yaml (v1), as the bytes of
// schema/agent.v1.json. Each call returns a fresh copy the caller may keep
// or change.
func Agent() []byte { return bytes.Clone(agentJSON) }

// Plan returns the JSON Schema of a plan document (v1: goal, steps with
// id, tool, depends_on, args and declaration), as the bytes of
// schema/plan.v1.json. Each call returns a fresh copy.
func Plan() []byte { return bytes.Clone(planJSON) }
