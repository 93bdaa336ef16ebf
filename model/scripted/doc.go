// Package scripted is the offline, deterministic stand-in for a language
// model. A YAML script lists canned replies; each call to Generate answers
// with the first unused reply whose step (and optional decision, model and
// prompt filter) matches the request, so a flow can be run, tested and
// replayed without a network or a provider account.
//
// A script looks like this:
//
//	replies:
//	  - step: extract_info            # matched against model.Request.StepID
//	    output: {"name": "Zhang"}     # answered as compact JSON text
//	  - step: score_candidate
//	    raw: "not json"               # answered as is (exercises format errors)
//	  - step: score_candidate
//	    error: transient              # or business: the call fails
//	    message: "upstream 503"
//	    tokens: {in: 120, out: 30}    # usage to report instead of an estimate
//	  - step: score_candidate
//	    contains: "Zhang"             # the request's Prompt() must contain this
//	    model: gpt-4o                 # the request must name this model
//	    delay: 50ms                   # wait (honouring ctx) before answering
//	    output: {"score": 72}
//
// Replies for the semantic router and the planner carry their decision:
//
//	replies:
//	  - step: triage
//	    decision: route               # only a request with Decision "route"
//	    route: account                # answered as {"route":"account","reason":"…"}
//	    reason: the customer was charged twice
//	  - step: plan_brief
//	    decision: plan                # only the planner's requests
//	    plan:                         # a plan object, answered as compact JSON
//	      goal: Tokyo brief
//	      steps:
//	        - {id: weather, tool: read_primary_weather, args: {city: Tokyo}}
//
// A turn of an agent loop (a request with tools) may be answered with
// tool calls; the same step's next reply answers the next turn:
//
//	replies:
//	  - step: travel_agent
//	    tool_calls:                   # answered as model.Response.ToolCalls
//	      - {name: get_weather, args: {city: Paris}}    # id made: call_0_0
//	      - {id: t2, name: get_weather, raw_args: '{"city": "Ro'}  # as is
//	  - step: travel_agent
//	    contains: "21"                # the prompt holds the tool results
//	    raw: "Paris is sunny at 21°C; Rome did not answer."
//
// turn: N makes a reply answer only turn N of an agent loop (the
// request's Turn): give it when a run may continue in another process,
// after an approval, where the replies already used are not known.
//
// decision is an optional filter matched against model.Request.Decision:
// route, plan, agent, review (the reviewer, package safety/review),
// summarize (an agent's summary of its earlier conversation, context:
// strategy: summarize), guardrail (an agent guardrail's judge), or llm
// for an llm step (Decision ""). A reply gives
// exactly one of output, raw, error, route, plan and tool_calls; route
// needs a non-empty reason; plan must be a mapping (it is not checked
// further: the planner validates plans, and a test may want a bad one); a
// route or plan reply may not name another decision, nor may tool_calls
// say route or plan. A tool call needs a name; args is a mapping (answered
// as compact JSON, {} when absent), raw_args text answered as is (to feed
// an agent arguments that are not JSON); ids, when given, are unique in
// the reply, and the ones left out are made from the reply's and the
// call's index (call_<reply>_<call>), the same on every run. A reply holds
// at most model.MaxToolCalls calls. To exercise the router's or planner's
// rejections, answer with raw: or output: instead.
//
// Parse and Load check a script strictly and report every problem at once
// as file:line:col: message. New builds a Model from Go values.
package scripted
