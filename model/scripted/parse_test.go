package scripted

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

func strp(s string) *string { return &s }

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []Reply
	}{
		{
			name: "brief example",
			src: `replies:
  - step: extract_info
    output: {"name": "Zhang", "years": 8}
  - step: score_candidate
    raw: "not json"
  - step: score_candidate
    error: transient
    message: "upstream 503"
    tokens: {in: 120, out: 30}
  - step: score_candidate
    contains: "Zhang"
    model: gpt-4o
    delay: 50ms
    output: {"score": 72}
`,
			want: []Reply{
				{Step: "extract_info", Output: map[string]any{"name": "Zhang", "years": uint64(8)}},
				{Step: "score_candidate", Raw: strp("not json")},
				{Step: "score_candidate", Error: fault.Transient, Message: "upstream 503", Tokens: &model.Usage{In: 120, Out: 30}},
				{Step: "score_candidate", Contains: "Zhang", Model: "gpt-4o", Delay: 50 * time.Millisecond, Output: map[string]any{"score": uint64(72)}},
			},
		},
		{
			name: "route and plan replies, decision filters",
			src: `replies:
  - step: triage
    decision: route
    route: account
    reason: "a billing question"
  - step: triage
    route: general
    reason: |
      nothing more specific fits
  - step: plan_trip
    decision: plan
    plan:
      goal: Tokyo brief
      steps:
        - {id: weather, tool: read_primary_weather, args: {city: Tokyo}}
  - step: plan_trip
    plan: {goal: g, steps: []}
  - step: triage
    decision: llm
    output: {"text": "hi"}
`,
			want: []Reply{
				{Step: "triage", Decision: "route", Route: "account", Reason: "a billing question"},
				{Step: "triage", Route: "general", Reason: "nothing more specific fits\n"},
				{Step: "plan_trip", Decision: "plan", Plan: map[string]any{"goal": "Tokyo brief", "steps": []any{
					map[string]any{"id": "weather", "tool": "read_primary_weather", "args": map[string]any{"city": "Tokyo"}},
				}}},
				{Step: "plan_trip", Plan: map[string]any{"goal": "g", "steps": []any{}}},
				{Step: "triage", Decision: "llm", Output: map[string]any{"text": "hi"}},
			},
		},
		{
			name: "empty list",
			src:  "replies: []\n",
			want: nil,
		},
		{
			name: "null output, empty raw, business error, partial tokens",
			src:  "replies:\n  - {step: a, output: null}\n  - {step: a, raw: ''}\n  - {step: a, error: business, tokens: {out: 3}}\n",
			want: []Reply{
				{Step: "a"},
				{Step: "a", Raw: strp("")},
				{Step: "a", Error: fault.Business, Tokens: &model.Usage{Out: 3}},
			},
		},
		{
			name: "a BOM and block strings",
			src:  "\xEF\xBB\xBFreplies:\n  - {step: a, output: [1, 2.5, true]}\n  - step: b\n    raw: |\n      line1\n      line2\n",
			want: []Reply{
				{Step: "a", Output: []any{uint64(1), 2.5, true}},
				{Step: "b", Raw: strp("line1\nline2\n")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse([]byte(tt.src), "s.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(m.replies, tt.want) {
				t.Errorf("replies\n got %#v\nwant %#v", m.replies, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string // the error's lines, exactly
	}{
		{
			name: "every reply problem at once",
			src: `replies:
  - step: a
    outptu: 1
    raw: 2
  - step: b
    output: 1
    raw: x
  - output: 1
  - step: c
    error: format
    tokens: {in: -1, out: x, foo: 1}
    delay: 5
  - step: d
    message: hi
    raw: ''
  - step: ""
    error: [transient]
  - step: e
    delay: -1s
`,
			want: []string{
				`s.yaml:3:5: unknown field "outptu" in replies[0] (known: step, decision, turn, contains, model, output, raw, route, reason, plan, tool_calls, error, message, tokens, delay)`,
				`s.yaml:4:10: replies[0]: raw must be a string, got integer`,
				`s.yaml:7:5: replies[1]: give exactly one of output, raw, error, route, plan or tool_calls, not output and raw`,
				"s.yaml:8:5: replies[2]: missing `step:` (the step id this reply answers)",
				`s.yaml:10:12: replies[3]: error must be transient or business, got "format" (for a format error, use raw: with text that is not valid JSON)`,
				`s.yaml:11:18: replies[3].tokens: in must be a non-negative integer, got "-1"`,
				`s.yaml:11:27: replies[3].tokens: out must be a non-negative integer, got "x"`,
				`s.yaml:11:30: unknown field "foo" in replies[3].tokens (known: in, out)`,
				`s.yaml:12:12: replies[3]: delay must be a non-negative duration such as 50ms or 2s, got "5"`,
				`s.yaml:14:5: replies[4]: message is only for error replies (add error: transient or error: business)`,
				`s.yaml:16:11: replies[5]: step must not be empty`,
				`s.yaml:17:12: replies[5]: error must be a string, got a list`,
				`s.yaml:18:5: replies[6]: give exactly one of output, raw, error, route, plan or tool_calls`,
				`s.yaml:19:12: replies[6]: delay must be a non-negative duration such as 50ms or 2s, got "-1s"`,
			},
		},
		{
			name: "route and plan problems",
			src: `replies:
  - step: a
    output: 1
    route: x
    reason: y
  - step: a
    route: x
  - step: a
    raw: x
    reason: y
  - step: a
    route: ""
    reason: ""
  - step: a
    plan: [1, 2]
  - step: a
    plan: "goal"
  - step: a
    decision: semantic
    route: [x]
    reason: y
  - step: a
    decision: plan
    route: x
    reason: y
  - step: a
    decision: route
    plan: {goal: g}
  - step: a
    decision: ""
    plan: {goal: .nan}
  - step: a
    route: x
    reason: y
    plan: {}
`,
			want: []string{
				`s.yaml:4:5: replies[0]: give exactly one of output, raw, error, route, plan or tool_calls, not output and route`,
				"s.yaml:7:5: replies[1]: route needs a reason: (why the request belongs to the route; the router rejects a route without one)",
				`s.yaml:10:5: replies[2]: reason is only for route replies (add route: NAME)`,
				`s.yaml:12:12: replies[3]: route must not be empty`,
				`s.yaml:13:13: replies[3]: reason must not be empty`,
				`s.yaml:15:11: replies[4]: plan must be a mapping (a plan object such as {goal: ..., steps: [...]}), got a list`,
				`s.yaml:17:11: replies[5]: plan must be a mapping (a plan object such as {goal: ..., steps: [...]}), got string`,
				`s.yaml:19:15: replies[6]: decision must be route, plan, agent, review, summarize, guardrail or llm, got "semantic"`,
				`s.yaml:20:12: replies[6]: route must be a string, got a list`,
				`s.yaml:24:5: replies[7]: a route reply answers the router, but decision is plan (drop decision: or say decision: route)`,
				`s.yaml:28:5: replies[8]: a plan reply answers the planner, but decision is route (drop decision: or say decision: plan)`,
				`s.yaml:30:15: replies[9]: decision must be route, plan, agent, review, summarize, guardrail or llm, got ""`,
				`s.yaml:31:11: replies[9]: plan cannot be written as JSON: json: unsupported value: NaN`,
				`s.yaml:35:5: replies[10]: give exactly one of output, raw, error, route, plan or tool_calls, not route and plan`,
			},
		},
		{
			name: "top level",
			src:  "replies: {}\nextra: 1\n",
			want: []string{
				`s.yaml:1:10: replies must be a list, got a mapping`,
				`s.yaml:2:1: unknown field "extra" in the script (known: replies)`,
			},
		},
		{name: "bare list", src: "- step: a\n", want: []string{"s.yaml:1:1: a script is a mapping with a `replies:` list; indent this list under `replies:`"}},
		{name: "empty", src: "# nothing\n", want: []string{"s.yaml:1:1: script is empty: expected a top-level `replies:` list"}},
		{name: "missing replies", src: "other: 1\n", want: []string{`s.yaml:1:1: unknown field "other" in the script (known: replies)`, "s.yaml:1:1: missing `replies:` list"}},
		{name: "reply not a mapping", src: "replies:\n  - hello\n", want: []string{`s.yaml:2:5: replies[0] must be a mapping, got string`}},
		{name: "syntax error", src: "a: b: c\n", want: []string{`s.yaml:1:4: mapping value is not allowed in this context`}},
		{name: "two documents", src: "replies: []\n---\nx: 1\n", want: []string{`s.yaml:3:1: a script is one YAML document; remove this second document`}},
		{name: "NaN output", src: "replies:\n  - step: a\n    output: .nan\n", want: []string{`s.yaml:3:13: replies[0]: output cannot be written as JSON: json: unsupported value: NaN`}},
		{name: "alias", src: "replies:\n  - step: a\n    output: *nope\n", want: []string{`s.yaml:3:13: YAML anchors (&name) and aliases (*name) are not supported in a script: write the value out`}},
		// Eight levels of aliases once expanded to gigabytes.
		{name: "alias bomb", src: "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nreplies: []\n", want: []string{`s.yaml:1:4: YAML anchors (&name) and aliases (*name) are not supported in a script: write the value out`}},
		{name: "too deep", src: "replies: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n", want: []string{`s.yaml:1:137: a script nests more than 128 levels deep here`}},
		{name: "too large", src: "replies: []\n#" + strings.Repeat("x", MaxFileBytes), want: []string{fmt.Sprintf("s.yaml:1:1: a script is %d bytes, more than the %d it may have", MaxFileBytes+13, MaxFileBytes)}},
		{name: "NUL", src: "replies:\n  - step: \"a\x00\"\n", want: []string{`s.yaml:2:13: a script holds a NUL byte here: remove it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse([]byte(tt.src), "s.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded with %d replies, want an error", len(m.replies))
			}
			var pe *ParseError
			if !errors.As(err, &pe) || len(pe.Problems) != len(tt.want) {
				t.Errorf("want a *ParseError with %d problems, got %T: %v", len(tt.want), err, err)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("error lines\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseDefaultFilename(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("replies: 1\n"), "")
	if want := "<script>:1:10: replies must be a list, got integer"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("replies:\n  - {step: a, raw: hi}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("replies:\n  - {step: a}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Load(good)
	if err != nil || len(m.Unused()) != 1 {
		t.Fatalf("Load(good) = %v, %v; want one reply", m, err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2:5: ") {
		t.Errorf("Load(bad) error = %v, want it to start with %s:2:5:", err, bad)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist", err)
	}
}
