package scripted

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"replies:\n  - step: a\n    output: {\"x\": 1}\n",
		"replies:\n  - {step: a, raw: x, tokens: {in: 1, out: 2}, delay: 1ms}\n",
		"replies:\n  - {step: a, error: transient, message: m, contains: c, model: m}\n",
		"replies:\n  - &r {step: a, output: [1, *r]}\n  - *r\n",
		"replies: {}\n---\n- x\n",
		"a: b: c\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "f.yaml")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("error %T %v is not a *ParseError with problems", err, err)
			}
			return
		}
		// Delays must not stall the fuzzer: a short deadline cuts them off.
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		for _, r := range m.Unused() {
			if r.Step == "" {
				t.Fatalf("accepted a reply without a step: %+v", r)
			}
			if _, err := m.Generate(ctx, req(r.Step, r.Model, r.Contains)); err != nil && strings.Contains(err.Error(), "output is not JSON") {
				t.Fatalf("accepted an output that cannot be answered: %v", err)
			}
		}
	})
}
