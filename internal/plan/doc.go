// Package plan turns a model-proposed plan into tool calls the runtime
// controls: Planner → Plan → Executor, with bounded replanning
// (docs/ARCHITECTURE.md "Decisions").
//
// A plan is candidate data:
//
//	{"goal": "Tokyo weather brief",
//	 "steps": [
//	   {"id": "weather", "tool": "read_primary_weather", "depends_on": [], "args": {"city": "Tokyo"}},
//	   {"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}}]}
//
// Parse reads it strictly (one JSON object, no unknown fields or duplicate
// keys, at most MaxBytes and MaxDepth). Validate checks it against a
// Catalog — the tool specs with their schemas compiled once, the subset a
// plan may use and the longest plan allowed — and reports every problem with
// its JSON pointer: unique ids; known, allowed tools and never a plan tool
// such as execute_plan (plans do not nest); depends_on and $ref only to
// earlier steps, so a cycle cannot be expressed; $ref paths the referenced
// tool's output schema declares, of a type the input property accepts; the
// literal args valid against the tool's input schema.
//
// The Executor, not the planner, runs a plan: each step once the steps it
// depends on (declared, or implied by a $ref) have succeeded, independent
// steps in parallel up to Concurrency, each call's resolved args validated
// against the input schema, passed through the safety.Gate and made with a
// tool.CallInfo whose idempotency key extends the key of the flow step's
// attempt the plan runs in (run/step/attempt/plan<n>/<plan-step>, n the
// plan's number: package invoke), and every start and settlement reported
// to OnEvent. Every call goes through the one invocation pipeline (package
// invoke): args schema, gate, key, call (returning at the context's
// deadline even when a tool ignores it), output schema, and a call record
// for ExecutorConfig.Recorder. The executor keeps its own budget of tool
// calls, whatever the plans say. A caller that can wait for a person (the
// agent loop) sets ExecutorConfig.Pausable: a step whose call needs
// approval (its tool in RequireApproval, or the gate's require_approval)
// then waits instead of failing, Execute returns a *WaitError naming each
// waiting step with its resolved args, and RunFrom continues the plan with
// the people's Decisions — an approved step runs with exactly those args,
// a rejected one fails with the person's comment, completed steps are not
// run again.
//
// A model wrote the plan, so with a gate every step is a chosen call: the
// gate sees each argument's origin — a $ref that of the referenced step's
// tool, a literal the origin of the run's evidence it is found in
// (State.Evidence: the user's input, tool outputs before the plan, the
// outputs of its completed steps), else inferred — the inferred arguments
// a read tool's output confirms, and the step's declaration
// ({"declaration": {action, facts, assumptions, side_effects}}, parsed
// strictly with pointers) with each fact checked against its source. A
// step the gate asks to verify fails with the JSON pointers of its missing
// declaration or unsupported facts, so a replan can add the lookup.
//
// Run joins them: it asks a Planner for a plan, executes it, and when a step
// fails asks again — with the failure as an observation and the completed
// steps with their outputs — at most Limits.MaxReplans times. Completed
// steps are never executed again (replanning is not retry): a new plan may
// $ref them, or list them again under the same id and tool to reuse them.
// Three budgets, three errors, each a fault.Budget error that names its
// budget (fault.BudgetOf): the plan length "max_steps", the tool calls of
// the run "max_executed_steps", and the revisions "max_replans".
//
// ModelPlanner asks a model through model.Decide, whose check runs Validate,
// so an invalid plan gets one corrective request carrying the validation
// errors; Scripted returns fixed plans in order, for tests.
package plan
