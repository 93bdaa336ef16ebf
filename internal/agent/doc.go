// Package agent is the agent loop: a bounded ReAct loop in which a model
// chooses tool calls or answers, and the runtime — not the model — decides
// what happens to each call.
//
// Each turn the model sees the instructions, the conversation (a
// Session's History and its Task) and every earlier turn with its calls and
// their observations, and returns tool calls or a final answer. Each call
// is then:
//
//  1. checked for a tool the loop offers and arguments that are a JSON
//     object; a call that is not becomes a structured observation (what is
//     wrong, where, what to do) and costs its turn;
//  2. passed through the one invocation pipeline (package invoke): args
//     schema (an invalid call is an observation naming the JSON pointer),
//     gate, approval, idempotency key (run/step/attempt/turn<t>/call<c>),
//     call with a deadline, normalise, output schema, call record;
//  3. paused when it needs a person (the tool's approval: required, or
//     the gate's require_approval): the call is committed with its exact
//     arguments and the loop returns StatusWaiting; a Decision resumes it —
//     approve runs exactly those arguments, reject hands the model
//     "rejected by a person: <comment>" as the observation;
//  4. executed, parallel calls of one turn concurrently (bounded by
//     Config.Concurrency), and its observation recorded.
//
// Durability: the loop commits each turn (the model's reply with its
// calls, before any of them runs) and then each call's outcome through a
// Journal. Run continues a Session from its committed turns: a turn
// already committed is never asked of the model again, a call already
// settled never runs again, and a call committed without an outcome (the
// process died while it ran) runs again only when its tool is idempotent
// or only reads; otherwise it is StatusUnknown and waits for a person's
// Decision, as flow steps do.
//
// One unit at a time (unit.go): a driver that records each unit before
// the next begins (the Temporal workflow) holds the Session itself, asks
// NextUnits what follows, and has Step carry out one unit — the model's
// next turn (committed, none of its calls run), or one call of the last
// turn — with the same code as Run. A call unit whose worker was lost runs
// with Unit.Lost: the resume rule above decides it.
//
// Provenance and declarations: before a call of a side-effecting tool
// runs (of any tool, when the pipeline has a gate), each leaf of its
// arguments is traced (safety.Evidence) to what the model had seen — the
// user's messages (History, Task) and the run's record (Config.Evidence)
// make it user, an earlier observation tool:<name> or db — or is
// inferred; inferred leaves a read tool's result confirms are Verified.
// A write, external or destructive tool's schema, as the model sees it,
// gains an optional "declaration" argument (DeclarationArg, unless the
// tool's own schema uses the name): the loop takes it out of the
// arguments (the tool never gets it), parses it strictly (a malformed one
// is an invalid call naming /declaration/...), and checks each fact
// against its source (safety.CheckDeclaration). Provenance, verifications,
// declaration and claims go to the gate and are journaled on the Call.
// When the gate asks to verify (undeclared-side-effect's require_review)
// the call is blocked and the observation, a JSON object, says what is
// unsupported and which read tools can check it: the next turn can.
//
// Budgets are separate counters with separate errors (fault.Budget with
// the budget's name): turns, tool calls, tokens and wall time.
//
// The execute_plan meta-tool (Config.ExecutePlan): the model hands over
// {objective, steps} and the loop checks the plan as package plan checks a
// planner's (over a Catalog of the loop's own tools; no nested
// execute_plan, no external tool unless allowed), every problem with its
// JSON pointer, before anything runs; then a plan.Executor runs it through
// the same pipeline, its keys extending the call's
// (…/turn<t>/call<c>/plan1/<plan-step>). The plan is a sub-run of the
// agent run (PlanRun): a PlanJournal records plan_started and
// plan_finished around its steps' events, the call keeps the PlanRun
// (status, tool calls against its own step budget PlanOptions.MaxSteps,
// each step's status), and a plan longer than the budget is answered
// error_type "budget". The answer is the call's observation; the plan
// never touches the Session (transcript, budgets, status), whatever
// happens inside — a failed step, the budget, a panic — so the loop goes
// on at the next turn. A plan step that needs a person's approval (its
// tool's approval: required, or the gate's require_approval) does not
// run: the call waits (StatusWaiting, with its PlanWait: the steps
// completed and each waiting step's resolved args), one Pending per
// waiting step (Ref turn<t>/call<c>/<plan-step>). Once every waiting step
// is decided the call runs again and its plan continues from the completed
// steps (plan.RunFrom): an approved step runs with exactly the recorded
// args, a rejected one fails with the person's comment.
//
// The context budget: an observation longer than
// Config.ObservationLimit bytes is stored whole through Config.Blobs
// (when set) and the transcript keeps its first ObservationLimit bytes
// plus a note with its size and blob reference, so the conversation sent
// to the model grows by at most ObservationLimit bytes (plus the note) per
// call, never by a tool's whole output.
package agent
