package expression

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCompileRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		refs []string
	}{
		{"{score_candidate.score} > 60", []string{"score_candidate.score"}},
		{"{ score_candidate.score } > 60 && score_candidate.score < 90", []string{"score_candidate.score"}},
		{`steps.extract.status == "done"`, []string{"steps.extract.status"}},
		{"input.items[0] != nil", []string{"input.items[0]"}},
		{"x", []string{"x"}},
		{"a.b[0].c > 1", []string{"a.b[0].c"}},
		{`a["b"].c == 1`, []string{"a.b.c"}},
		{"a[i].b == 1", []string{"a", "i"}},
		{"a.b[-1] == 1", []string{"a.b"}},
		{"all(items, {.score > min_score}) && any(items, # > 0)", []string{"items", "min_score"}},
		{"let v = a.b; v.c > 0 && d", []string{"a.b", "d"}},
		{"x?.y?.z == nil", []string{"x.y.z"}},
		{`{"a": 1, b: k}.a == 1`, []string{"k"}},
		{`"{a}" == '{b}'`, nil},
		{"len(xs) > 0 // {c} comment", []string{"xs"}},
		{"xs | filter(# > lim) | len() > 0", []string{"xs", "lim"}},
		{"cond ? a.x : b.y", []string{"cond", "a.x", "b.y"}},
		{"n in [1, 2, m]", []string{"n", "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.src, err)
			}
			var got []string
			for _, r := range p.Refs() {
				got = append(got, r.String())
			}
			if !reflect.DeepEqual(got, tt.refs) {
				t.Errorf("Refs() = %q, want %q", got, tt.refs)
			}
			if p.Source() != tt.src {
				t.Errorf("Source() = %q", p.Source())
			}
		})
	}
}

func TestRefSites(t *testing.T) {
	t.Parallel()
	p := MustCompile("{a.b} > 1 && a.b < 5 || é == c")
	var got []string
	for _, r := range p.RefSites() {
		got = append(got, r.Path.String()+"@"+itoa(r.Offset))
	}
	want := []string{"a.b@1", "a.b@13", "é@24", "c@30"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RefSites() = %v, want %v", got, want)
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		offset int
		msg    string
	}{
		{`__import__("os").system("x")`, 0, "function __import__ is not allowed; allowed: abs, all,"},
		{`os.system("rm -rf /")`, 3, "method calls are not allowed"},
		{"now() > 0", 0, "function now is not allowed"},
		{"date('2020-01-01') != nil", 0, "function date is not allowed"},
		{"duration('1h') > 0", 0, "function duration is not allowed"},
		{"x > 1 && get(m, 'k')", 9, "function get is not allowed"},
		{"find(xs, # > 1) != nil", 0, "function find is not allowed"},
		{"reduce(xs, #acc + #) > 0", 0, "function reduce is not allowed"},
		{"$env.x", 0, "$env is not allowed"},
		{"x && count > 2", 5, "count is a function; it cannot be used as a name (call it as count(...))"},
		{"{steps.send-email.status} == 'ok'", 1, `reference steps.send-email.status contains '-', which is minus in an expression; write steps["send-email"].status`},
		{"{send-email.ok}", 1, "the root send-email cannot be read"},
		{"1 +", 2, "unexpected token EOF"},
		{"é + (", 5, "unexpected token EOF"},
		{"", 0, "empty expression"},
		{"{a} > 'x' +", 10, "unexpected token EOF"},
		{"import os; os.system('ls')", 7, "unexpected token"},
		{"$(rm -rf /)", 0, ""},
		{"'a' + 1 > 0", 4, "mismatched types string and int"},
		{strings.Repeat("1 + ", 300) + "1 > 0", 0, "exceeds maximum allowed nodes"},
		{strings.Repeat(" ", MaxSourceLen) + "x", MaxSourceLen, "expression is 2049 bytes long; the limit is 2048"},
	}
	for _, tt := range tests {
		name := tt.src
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tt.src)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile(%q) error = %v, want *Error", tt.src, err)
			}
			if tt.msg != "" && !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Msg = %q, want it to contain %q", e.Msg, tt.msg)
			}
			if tt.msg != "exceeds maximum allowed nodes" && tt.msg != "" && e.Offset != tt.offset {
				t.Errorf("Offset = %d, want %d (%s)", e.Offset, tt.offset, e.Msg)
			}
			if e.Offset < 0 || e.Offset > len(tt.src) {
				t.Errorf("Offset %d outside the source", e.Offset)
			}
		})
	}
}

func TestErrorCaret(t *testing.T) {
	t.Parallel()
	_, err := Compile("x > 1 &&\n  now() > 0")
	want := "function now is not allowed; allowed: " + strings.Join(Allowed(), ", ") + "\n |   now() > 0\n | ..^"
	if err == nil || err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err, want)
	}
}

func TestRewriteBraces(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"{a.b} > 1", " a.b  > 1"},
		{"{ a } + {b[0]}", "  a   +  b[0] "},
		{`{"a": 1}`, `{"a": 1}`},
		{"filter(xs, {# > 1})", "filter(xs, {# > 1})"},
		{"'{a}' + `{b}` + \"{c\\\"}\"", "'{a}' + `{b}` + \"{c\\\"}\""},
		{"{{a}}", "{ a }"},
		{"/* {a} */ {b}", "/* {a} */  b "},
		{"{a", "{a"},
	}
	for _, tt := range tests {
		got, err := rewriteBraces(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("rewriteBraces(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if len(got) != len(tt.in) {
			t.Errorf("rewriteBraces(%q) changed the length", tt.in)
		}
	}
}

func TestAllowedIsSortedCopy(t *testing.T) {
	t.Parallel()
	a := Allowed()
	if !sortedStrings(a) || len(a) != 35 {
		t.Fatalf("Allowed() = %v", a)
	}
	a[0] = "now"
	if Allowed()[0] != "abs" {
		t.Fatal("Allowed() returned the internal slice")
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}
