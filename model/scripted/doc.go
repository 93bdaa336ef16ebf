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
// decision is an optional filter matched against model.Request.Decision:
// route, plan, or llm for an llm step (Decision ""). A reply gives exactly
// one of output, raw, error, route and plan; route needs a non-empty
// reason; plan must be a mapping (it is not checked further: the planner
// validates plans, and a test may want a bad one); a route or plan reply
// may not name another decision. To exercise the router's or planner's
// rejections, answer with raw: or output: instead.
//
// Parse and Load check a script strictly and report every problem at once
// as file:line:col: message. New builds a Model from Go values.
package scripted
