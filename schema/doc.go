// Package schema ships the JSON Schemas (draft 2020-12) of rein's files:
// flow.v1.json for flow files, rein.v1.json for rein.yaml, agent.v1.json
// for agent.yaml and plan.v1.json for plan documents (what a planner or
// execute_plan writes). Editors use
// them through yaml-language-server (a first line such as
// "# yaml-language-server: $schema=../../schema/flow.v1.json") to complete
// and check fields; `rein validate` remains the full check (references,
// cycles, expressions, schemas of upstream outputs).
//
// The schemas describe exactly the fields the loader in package flow
// accepts, and reject unknown fields where it does.
package schema
