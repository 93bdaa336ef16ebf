package ref

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Path
	}{
		{"a", Path{{Key: "a"}}},
		{"_x9", Path{{Key: "_x9"}}},
		{"a.b[0].c", Path{{Key: "a"}, {Key: "b"}, {Index: 0, IsIndex: true}, {Key: "c"}}},
		{"steps.send-email.status", Path{{Key: "steps"}, {Key: "send-email"}, {Key: "status"}}},
		{"items[12][3]", Path{{Key: "items"}, {Index: 12, IsIndex: true}, {Index: 3, IsIndex: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Errorf("String() = %q, want %q", s, tt.in)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, "empty reference"},
		{"1a", 0, `unexpected '1'; a reference must start with a letter or '_'`},
		{"a.", 2, "missing field name after '.'"},
		{"a..b", 2, `unexpected '.'; a field name after '.' must start with a letter or '_'`},
		{"a[", 1, "unclosed '['"},
		{"a[1", 1, "unclosed '['"},
		{"a[x]", 2, `unexpected 'x'; a list index must be a non-negative integer`},
		{"a[-1]", 2, `unexpected '-'; a list index must be a non-negative integer`},
		{"a[1x]", 3, `unexpected 'x'; expected ']'`},
		{"a b", 1, `unexpected ' ' in reference; expected '.' or '['`},
		{"a[99999999999999999999]", 2, "list index is too large"},
		{"-a", 0, `unexpected '-'; a reference must start with a letter or '_'`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.in)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v, want *SyntaxError", tt.in, err)
			}
			if se.Offset != tt.offset || se.Msg != tt.msg {
				t.Errorf("Parse(%q) = {%d %q}, want {%d %q}", tt.in, se.Offset, se.Msg, tt.offset, tt.msg)
			}
		})
	}
}

func TestSuffix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a": ".a", "a.b[0].c": ".a.b[0].c", "a[1][2]": ".a[1][2]"} {
		if got := MustParse(in).Suffix(); got != want {
			t.Errorf("%s: Suffix() = %q, want %q", in, got, want)
		}
	}
	if got := (Path{{Index: 3, IsIndex: true}}).Suffix(); got != "[3]" {
		t.Errorf("[3]: Suffix() = %q", got)
	}
	if got := Path(nil).Suffix(); got != "" {
		t.Errorf("empty path: Suffix() = %q", got)
	}
}

func TestIsKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"a", true}, {"send-email", true}, {"_", true}, {"", false}, {"9a", false}, {"a.b", false}, {"-a", false},
	}
	for _, tt := range tests {
		if got := IsKey(tt.in); got != tt.want {
			t.Errorf("IsKey(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a", "a.b[0].c", "steps.send-email.status", "x[01]", "a[", "a..b", "", "_-_[9]", "a.b.c.d.e[1][2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("Parse(%q) bad error %v", s, err)
			}
			return
		}
		if len(p) == 0 || p[0].IsIndex {
			t.Fatalf("Parse(%q) = %#v: must start with a key", s, p)
		}
		q, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, p.String(), err)
		}
		if !q.Equal(p) {
			t.Fatalf("round trip of %q: %#v != %#v", s, q, p)
		}
	})
}
