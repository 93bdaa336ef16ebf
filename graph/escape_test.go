package graph

import (
	"regexp"
	"testing"
)

func TestStepNodeID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		index int
		id    string
		want  string
	}{
		{0, "extract_info", "s0_extract_info"},
		{1, "fetch-web", "s1_fetch_web"},
		{2, "fetch_web", "s2_fetch_web"},
		{3, "end", "s3_end"},
		{4, "graph", "s4_graph"},
		{5, "", "s5"},
		{6, "naïve", "s6_na_ve"},
	}
	safe := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			got := stepNodeID(tc.index, tc.id)
			if got != tc.want {
				t.Errorf("stepNodeID(%d, %q) = %q, want %q", tc.index, tc.id, got, tc.want)
			}
			if !safe.MatchString(got) {
				t.Errorf("stepNodeID(%d, %q) = %q is not a bare Mermaid/DOT id", tc.index, tc.id, got)
			}
		})
	}
}

func TestMermaidText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`say "hi"`, "say #quot;hi#quot;"},
		{"a < b > c", "a #lt; b #gt; c"},
		{"a && b", "a #amp;#amp; b"},
		{"#1", "#35;1"},
		{"#quot;", "#35;quot;"},
		{"a|b", "a#124;b"},
		{"`md`", "#96;md#96;"},
		{"100%", "100#37;"},
		{"style x: #f00;", "style x#58; #35;f00;"},
		{"two\nlines\r\nthree\rfour", "two<br>lines<br>three<br>four"},
		{"<br>", "#lt;br#gt;"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := mermaidText(tc.in); got != tc.want {
				t.Errorf("mermaidText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDOTString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`say "hi"`, `"say \"hi\""`},
		{`back\slash \N`, `"back\\slash \\N"`},
		{"a < b > c", `"a &lt; b &gt; c"`},
		{"a && b", `"a &amp;&amp; b"`},
		{"&lt;", `"&amp;lt;"`},
		{"two\nlines\r\nthree", `"two\nlines\nthree"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := dotString(tc.in); got != tc.want {
				t.Errorf("dotString(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestValueText(t *testing.T) {
	t.Parallel()
	long := make([]any, 40)
	for i := range long {
		long[i] = i
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, "null"},
		{"object keys sorted", map[string]any{"b": 1.0, "a": "<x>"}, `{"a":"<x>","b":1}`},
		{"long values are cut", long, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22…`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := valueText(tc.in); got != tc.want {
				t.Errorf("valueText = %q, want %q", got, tc.want)
			}
		})
	}
}
