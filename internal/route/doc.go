// Package route is rein's hybrid router: deterministic rules first, and
// only when none matches, a semantic router that chooses one route from a
// closed set and says why (docs/ARCHITECTURE.md "Decisions"). The result
// is data, {route, source, reason}; dispatching to a handler is ordinary
// code.
//
// # Rules
//
// A Rule has exactly one condition — a Prefix of the text, an RE2 Regexp
// found anywhere in it, or an Expr over the request (package
// flow/expression: compiled, whitelisted, side-effect free; it reads text
// and metadata, e.g. `text contains 'refund'`, `len(text) > 200`,
// `metadata.channel == 'email'`) — and the route it selects. Rules are
// tried in order; the first that matches decides, and no model is called.
// Matching is fast: the literals regexps and `text contains '…'`-shaped
// expressions require are found in one Aho-Corasick pass over the text, so
// most rules are rejected without running them (BenchmarkRuleMatch100:
// 100 rules, a match at rule 97, under the 2 µs target).
//
// # Semantic routing
//
// When no rule matches, Config.Semantic chooses. NewModelSemantic asks a
// model.Model through model.Decide: the system message lists every route
// with its description, the JSON Schema makes route an enum of the route
// names and reason a required non-empty string, and a Check rejects a
// route outside the set or a blank reason. A rejected reply gets one
// corrective request carrying the problem; a second is a fault.Format
// error. A choice outside the set is never guessed, nor mapped to a
// default. Router.Route checks every Semantic's choice the same way, so
// ScriptedMap and ScriptedFunc — semantic routers for tests, which count
// their calls — cannot smuggle one in either.
//
// Config.Fallback optionally names a route for requests no rule matches,
// and only applies when there is no semantic router (the two cannot be
// combined); without either, such a request is an ErrNoMatch error.
//
// # Routes files
//
// Parse and ParseFile read the routes file of `rein route "request text"`:
//
//	routes:
//	  - name: weather
//	    description: Weather questions for a city
//	    rules: [{prefix: "weather:"}, {regexp: "(?i)\\bforecast\\b"}]
//	  - name: account
//	    description: Billing, charges, refunds, login
//	    rules: [{expr: "text contains 'invoice'"}]
//	  - name: general
//	    description: Anything else (rewrites, summaries)
//	rules:                # optional: rules that name their route
//	  - {expr: "metadata.channel == 'billing-desk'", route: account}
//	model: default        # optional: the model the semantic router uses
//	# fallback: general   # optional, instead of model: no model is called
//
// A rule under a route selects that route; a rule in the top-level rules:
// list names it with route:. All rules are tried in the order they appear
// in the file. model: and fallback: exclude each other. Unknown fields,
// wrong types, anchors, aliases and tags are rejected, and every problem
// is reported as file:line:col.
//
// A Router is immutable and safe for concurrent use.
package route
