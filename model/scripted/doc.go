// Package scripted is the offline, deterministic stand-in for a language
// model. A YAML script lists canned replies; each call to Generate answers
// with the first unused reply whose step (and optional model and prompt
// filter) matches the request, so a flow can be run, tested and replayed
// without a network or a provider account.
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
// Parse and Load check a script strictly and report every problem at once
// as file:line:col: message. New builds a Model from Go values.
package scripted
