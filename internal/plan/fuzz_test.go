package plan_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/plan"
)

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{primaryPlan, backupPlan, manySteps(3),
		`{"steps": [{"id": "a", "tool": "lookup", "args": {"x": {"$ref": "a.b[0].c"}}}]}`,
		`{"goal": "g", "steps": [{"id": "a", "tool": "t", "why": 1}]}`,
		`{"steps": [{"id": "a", "id": "b"}]}`, `{"steps": [`, `[]`, `"x"`, `{} {}`, "Here is the plan",
		`{"steps": [{"id": "a", "tool": "lookup", "depends_on": ["b"]}, {"id": "b", "tool": "lookup", "depends_on": ["a"]}]}`,
		`{"steps": [{"id": "a", "tool": "write_brief", "declaration": {"action": "x", "facts": [{"claim": "c", "source": "tool:lookup", "evidence": "e"}], "assumptions": [{"claim": "a", "affects": ["/x"]}]}}]}`,
	} {
		f.Add([]byte(s))
	}
	for _, tt := range validateCases {
		if len(tt.plan) < 4<<10 { // big seeds slow every mutation down
			f.Add([]byte(tt.plan))
		}
	}
}

func checkProblems(t *testing.T, what string, ps []plan.Problem) {
	if len(ps) == 0 {
		t.Fatalf("%s error without problems", what)
	}
	for _, p := range ps {
		if p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/") {
			t.Fatalf("%s problem with a bad pointer %q: %s", what, p.Pointer, p.Message)
		}
		if p.Message == "" {
			t.Fatalf("%s problem at %q without a message", what, p.Pointer)
		}
	}
}

func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Parse(data)
		if err != nil {
			var pe *plan.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			checkProblems(t, "parse", pe.Problems)
			return
		}
		out := p.JSON()
		again, err := plan.Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if !bytes.Equal(again.JSON(), out) {
			t.Fatalf("round trip changed the plan:\n%s\n%s", out, again.JSON())
		}
	})
}

func FuzzValidate(f *testing.F) {
	fuzzSeeds(f)
	w := newWorld(f)
	w.primaryDown = false
	w.addCheckUnit(f)
	cat := w.catalog(f, nil, 60)
	ex := w.executor(f, plan.ExecutorConfig{Catalog: cat, MaxExecuted: 60})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Parse(data)
		if err != nil {
			return
		}
		verr := plan.Validate(p, cat)
		if verr != nil {
			var ve *plan.ValidationError
			if !errors.As(verr, &ve) {
				t.Fatalf("error %T %v is not a *ValidationError", verr, verr)
			}
			checkProblems(t, "validate", ve.Problems)
			if err := ex.Execute(context.Background(), p, nil); !errors.As(err, &ve) {
				t.Fatalf("the executor ran a plan Validate rejected: %v", err)
			}
			return
		}
		var se *plan.StepError
		if err := ex.Execute(context.Background(), p, nil); err != nil && !errors.As(err, &se) {
			t.Fatalf("a valid plan failed outside its steps: %v", err)
		}
	})
}
