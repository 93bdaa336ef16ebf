package template

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow/ref"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src     string
		refs    []string
		offsets []int
		literal bool
		single  bool
	}{
		{src: "", literal: true},
		{src: "plain text", literal: true},
		{src: "a {{b}} c", literal: true},
		{src: "{input_text}", refs: []string{"input_text"}, offsets: []int{0}, single: true},
		{src: "{ extract_info.name }", refs: []string{"extract_info.name"}, offsets: []int{0}, single: true},
		{src: " {x}", refs: []string{"x"}, offsets: []int{1}},
		{src: "Score {a.b[0]} and {c}!", refs: []string{"a.b[0]", "c"}, offsets: []int{6, 19}},
		{src: "{{{a}}}", refs: []string{"a"}, offsets: []int{2}},
		{src: "{steps.send-email.status}", refs: []string{"steps.send-email.status"}, offsets: []int{0}, single: true},
		{src: "{a}{b}", refs: []string{"a", "b"}, offsets: []int{0, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			tm, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			var refs []string
			var offsets []int
			for _, r := range tm.Refs() {
				refs = append(refs, r.Path.String())
				offsets = append(offsets, r.Offset)
			}
			if !reflect.DeepEqual(refs, tt.refs) || !reflect.DeepEqual(offsets, tt.offsets) {
				t.Errorf("Refs() = %v at %v, want %v at %v", refs, offsets, tt.refs, tt.offsets)
			}
			if tm.IsLiteral() != tt.literal || tm.Single() != tt.single {
				t.Errorf("IsLiteral, Single = %v, %v; want %v, %v", tm.IsLiteral(), tm.Single(), tt.literal, tt.single)
			}
			if tm.String() != tt.src {
				t.Errorf("String() = %q, want %q", tm.String(), tt.src)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		offset int
		msg    string
	}{
		{"hello {name", 6, "unclosed '{'"},
		{"a {} b", 2, "empty placeholder"},
		{"a {   } b", 2, "empty placeholder"},
		{"a } b", 2, "unexpected '}'"},
		{"{a}}", 3, "unexpected '}'"},
		{"x {1abc}", 3, "bad placeholder {1abc}"},
		{"x {  a..b }", 7, "bad placeholder {a..b}"},
		{"x {a b}", 4, "bad placeholder {a b}"},
		{"{a{b}", 2, "bad placeholder {a{b}"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v, want *SyntaxError", tt.src, err)
			}
			if se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("Parse(%q) = {%d %q}, want {%d ...%q...}", tt.src, se.Offset, se.Msg, tt.offset, tt.msg)
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("MustParse did not panic on a bad template")
		}
	}()
	MustParse("{")
}

func scope() map[string]any {
	return map[string]any{
		"input_text": "I am Ada.",
		"extract_info": map[string]any{
			"name": "Ada", "years": 18.0, "ratio": 64.4, "ok": true, "none": nil,
			"tags": []any{"go", "<sql>"}, "big": 1e21, "tiny": 0.0000001, "count": int64(7), "n": 3,
		},
		"items": []any{map[string]any{"title": "first"}},
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want any
	}{
		{"plain {{x}}", "plain {x}"},
		{"", ""},
		{"Hi {extract_info.name}!", "Hi Ada!"},
		{"{extract_info.years} years", "18 years"},
		{"r={extract_info.ratio}", "r=64.4"},
		{"{extract_info.ok}/{extract_info.none}", "true/null"},
		{"n={extract_info.count},{extract_info.n}", "n=7,3"},
		{"big={extract_info.big} tiny={extract_info.tiny}", "big=1e+21 tiny=1e-7"},
		{"tags: {extract_info.tags}", `tags: ["go","<sql>"]`},
		{"facts: {items}", `facts: [{"title":"first"}]`},
		{"{ items[0].title }", "first"},
		{"{extract_info.years}", 18.0},
		{"{extract_info.tags}", []any{"go", "<sql>"}},
		{"{extract_info.none}", nil},
		{"{{{input_text}}}", "{I am Ada.}"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			got, err := MustParse(tt.src).Render(scope())
			if err != nil {
				t.Fatalf("Render(%q): %v", tt.src, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Render(%q) = %#v, want %#v", tt.src, got, tt.want)
			}
		})
	}
}

func TestRenderObjectSortedKeys(t *testing.T) {
	t.Parallel()
	got, err := MustParse("x={extract_info}").RenderString(map[string]any{
		"extract_info": map[string]any{"z": 1.0, "a": "b", "m": []any{nil}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `x={"a":"b","m":[null],"z":1}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestRenderMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, msg string
		at       int
	}{
		{"Hello {extract_info.resume}", `placeholder {extract_info.resume} at offset 6: field "resume" not found in extract_info (has: big, count, n, name, none, ok, ratio, tags, tiny, years)`, 1},
		{"{nobody}", `placeholder {nobody} at offset 0: name "nobody" not found (has: extract_info, input_text, items)`, 0},
		{"x {items[4]}", `placeholder {items[4]} at offset 2: index 4 out of range in items (length 1)`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			_, err := MustParse(tt.src).Render(scope())
			var re *RenderError
			var me *ref.MissingError
			if !errors.As(err, &re) || !errors.As(err, &me) {
				t.Fatalf("error = %v, want *RenderError wrapping *ref.MissingError", err)
			}
			if err.Error() != tt.msg || me.At != tt.at {
				t.Errorf("error = %q (At %d), want %q (At %d)", err, me.At, tt.msg, tt.at)
			}
		})
	}
}

func TestRenderUnencodable(t *testing.T) {
	t.Parallel()
	_, err := MustParse("x {a}").Render(map[string]any{"a": map[string]any{"f": func() {}}})
	var re *RenderError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "cannot render an object as JSON") {
		t.Fatalf("error = %v, want a JSON encoding *RenderError", err)
	}
}

func TestRenderAllocs(t *testing.T) {
	tm := MustParse("Score the candidate {extract_info.name} with {extract_info.years} years of experience.")
	s := scope()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := tm.Render(s); err != nil {
			t.Fatal(err)
		}
	})
	// one for the builder's buffer, one for boxing the string result
	if allocs > 2 {
		t.Fatalf("Render allocated %v times per run, want <= 2", allocs)
	}
}

func BenchmarkRender(b *testing.B) {
	tm := MustParse("Extract structured fields from this resume of {extract_info.name}: {input_text}")
	s := scope()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tm.Render(s); err != nil {
			b.Fatal(err)
		}
	}
}
