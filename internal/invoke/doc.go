// Package invoke is the one path of every tool call rein makes — flow tool
// steps and their for_each items and repeat rounds, fallback tools, plan
// steps, agent calls, MCP tools, workflow adapters and compensations
// (undo and compensate calls of a saga or a remediation). A caller builds a Pipeline once and passes each call
// through Pipeline.Call, which runs the same stages in the same order:
//
//  1. args schema: the args are checked against the tool's input schema
//     (a business error, nothing called);
//  2. gate: the safety.Gate decides, and every decision is handed to the
//     Recorder before anything else happens (anything but allow is a policy
//     error, nothing called); then approval: a call whose tool requires it
//     (Request.RequireApproval), or that the gate answers require_approval
//     for a caller that can pause (Request.Pausable: the agent loop and the
//     plans it runs), stops
//     here with Outcome AwaitingApproval and an *ApprovalError until the
//     caller makes it again with Request.Approved;
//  3. idempotency key: derived from the call's Position (see Key) and
//     given to the tool in its tool.CallInfo;
//  4. call: a Recorder that is a Starter is told first, and may stop the
//     call (a durable run commits the start of a non-idempotent call);
//     a panic becomes a business error; when the context has a
//     deadline the call returns at the deadline even if the tool ignores
//     its context — the tool keeps running on its own goroutine, and what it
//     returns afterwards is discarded and recorded (Outcome Late), never
//     counted as success;
//  5. normalise: the output becomes plain JSON values (value.Normalize);
//  6. output schema: the output is checked against the given schema;
//     then the tool's premise (tool.Spec.Premise), when it declares one:
//     an output that contradicts it is Outcome PremiseFailed and a
//     *tool.PremiseError, the output returned beside it (the effect
//     happened; the caller pauses the run); then, when the gate is a safety.PostChecker (a tier-4 run's
//     controls), the post-check of the effect: its failure is a policy
//     error and Outcome CheckFailed;
//  7. call record: a Record (position, key, tool, args, output, outcome, timing) is
//     handed to the Recorder (none, and no timing, without a Recorder).
//
// The idempotency key has one format for every caller:
//
//	key = run "/" step ["[" item "]"] ["#" round] ["/fallback"] "/" attempt {sub} ["/" remedy]
//	sub = "/plan" n "/" plan-step   (a step of the n-th plan of a plan step)
//	    | "/turn" t "/call" c       (call c of turn t of an agent step)
//	    | "/check"                  (the post-check after the call it extends)
//	remedy = "undo" | "compensate"  (the call that takes back the call keyed before it)
//
// so a plain step's key is exactly run/step/attempt, a for_each item's is
// run/step[2]/1, a repeat round's run/step#3/1, a fallback tool's
// run/step/fallback/1 (run/step/fallback/n+1 once rein runs retry
// re-opened the step at attempt n: the attempt its new execution begins
// at), and a plan step's extends the key of the flow step's attempt it
// runs in: run/step/1/plan2/fetch, and a compensation extends the key of
// the call it takes back: run/step[2]/1/compensate. The same call made again
// (a resumed run retrying an idempotent step) gets the same key; any other
// call gets another.
package invoke
