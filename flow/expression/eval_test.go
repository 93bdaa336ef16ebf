package expression

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func env() map[string]any {
	return map[string]any{
		"score_candidate": map[string]any{"score": 61.0},
		"extract_info":    map[string]any{"name": "Ada", "skills": []any{"go", "sql"}},
		"steps":           map[string]any{"extract": map[string]any{"status": "done"}},
		"input":           map[string]any{"items": []any{1.0, 2.0, 3.0}},
		"n":               nil,
		"n_count":         3,
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want bool
	}{
		{"{score_candidate.score} > 60", true},
		{"score_candidate.score > 61", false},
		{`steps.extract.status == "done"`, true},
		{"input.items[0] == 1", true},
		{"missing == nil", true},
		{"n == nil && n?.x == nil", true},
		{"score_candidate.nope == nil", true},
		{"missing?.a?.b == nil", true},
		{"len(extract_info.skills) == 2 && 'go' in extract_info.skills", true},
		{"all(input.items, # > 0) && none(input.items, # > 5)", true},
		{"count(input.items, # >= 2) == 2 && sum(input.items) == 6", true},
		{"upper(extract_info.name) == 'ADA' && hasPrefix(lower(extract_info.name), 'a')", true},
		{"max(1, 2) == 2 && int('7') == 7 && string(1) == '1' && type(n) == 'nil'", true},
		{"n_count > 2", true},
		{"'sql' in map(extract_info.skills, lower(#))", true},
		{`{"a": 1}.a == 1`, true},
		{"keys(score_candidate) == ['score']", true},
		{"round(1.5) == 2 && floor(1.5) == 1 && abs(-1) == 1 && mean([1, 3]) == 2", true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			got, err := MustCompile(tt.src).Eval(env())
			if err != nil {
				t.Fatalf("Eval(%q): %v", tt.src, err)
			}
			if got != tt.want {
				t.Errorf("Eval(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		offset int
		msg    string
	}{
		{"score_candidate.score", 0, "expression must evaluate to a boolean, got a number (61)"},
		{"extract_info.name", 0, `got a string ("Ada")`},
		{"extract_info", 0, "got an object"},
		{"missing", 0, "got nil"},
		{"missing.x == 1", 8, `cannot read field "x" of nil; use ?. (x?.x) to allow nil`},
		{"input.items[7] == 1", 11, "index out of range: 7 (array length is 3)"},
		{"len(1..10000000) > 0", 5, "memory budget exceeded"},
		{"extract_info.name > 1", 18, "invalid operation"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			_, err := MustCompile(tt.src).Eval(env())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Eval(%q) error = %v, want *Error", tt.src, err)
			}
			if !strings.Contains(e.Msg, tt.msg) || e.Offset != tt.offset {
				t.Errorf("Eval(%q) = {%d %q}, want {%d ...%q...}", tt.src, e.Offset, e.Msg, tt.offset, tt.msg)
			}
		})
	}
}

func TestEvalValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want any
	}{
		{"filter(input.items, # > 1)", []any{2.0, 3.0}},
		{"extract_info.skills", []any{"go", "sql"}},
		{"score_candidate.score + 1", 62.0},
		{"missing", nil},
		{"[1, 'a']", []any{1, "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			got, err := MustCompile(tt.src).EvalValue(env())
			if err != nil {
				t.Fatalf("EvalValue(%q): %v", tt.src, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EvalValue(%q) = %#v, want %#v", tt.src, got, tt.want)
			}
		})
	}
}

func TestEvalNilEnv(t *testing.T) {
	t.Parallel()
	got, err := MustCompile("x == nil").Eval(nil)
	if err != nil || !got {
		t.Fatalf("Eval(nil env) = %v, %v; want true, nil", got, err)
	}
}

func TestEvalConcurrent(t *testing.T) {
	t.Parallel()
	p := MustCompile("score_candidate.score > limit")
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 64 {
		wg.Go(func() {
			e := env()
			e["limit"] = float64(i)
			got, err := p.Eval(e)
			if want := float64(i) < 61; err != nil || got != want {
				errs <- p.Source()
			}
		})
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Eval(%q) gave a wrong result", s)
	}
}

func TestEvalAllocs(t *testing.T) {
	p := MustCompile("{score_candidate.score} > 60")
	e := env()
	allocs := testing.AllocsPerRun(200, func() {
		if ok, err := p.Eval(e); err != nil || !ok {
			t.Fatal(ok, err)
		}
	})
	if allocs > 1 {
		t.Fatalf("Eval allocated %v times per run, want <= 1", allocs)
	}
}

func BenchmarkEval(b *testing.B) {
	p := MustCompile("score_candidate.score > 60")
	e := env()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Eval(e); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("{score_candidate.score} > 60 && steps.extract.status == 'done'"); err != nil {
			b.Fatal(err)
		}
	}
}
