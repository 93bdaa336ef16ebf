package template

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/value"
)

func TestParseValueRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"scalar", 3.0, 3.0},
		{"int", 3, 3},
		{"literal string", "a {{b}}", "a {b}"},
		{"typed single", map[string]any{"years": "{extract_info.years}"}, map[string]any{"years": 18.0}},
		{
			"nested",
			map[string]any{
				"to":      []any{"{extract_info.name}", "boss@example.com"},
				"subject": "Hi {extract_info.name}, {extract_info.years}",
				"meta":    map[string]any{"ok": true, "n": nil, "tags": "{extract_info.tags}"},
			},
			map[string]any{
				"to":      []any{"Ada", "boss@example.com"},
				"subject": "Hi Ada, 18",
				"meta":    map[string]any{"ok": true, "n": nil, "tags": []any{"go", "<sql>"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, errs := ParseValue(tt.in)
			if errs != nil {
				t.Fatalf("ParseValue: %v", errs)
			}
			got, err := v.Render(scope())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Render = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseValueDoesNotMutateInput(t *testing.T) {
	t.Parallel()
	in := map[string]any{"a": []any{"{x}", "{{lit}}"}, "b": map[string]any{"c": "{x}"}}
	v, errs := ParseValue(in)
	if errs != nil {
		t.Fatal(errs)
	}
	out1, err := v.Render(map[string]any{"x": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	out1.(map[string]any)["a"].([]any)[0] = "changed"
	out2, err := v.Render(map[string]any{"x": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{2.0, "{lit}"}, "b": map[string]any{"c": 2.0}}
	if !reflect.DeepEqual(out2, want) {
		t.Errorf("second Render = %#v, want %#v", out2, want)
	}
	orig := map[string]any{"a": []any{"{x}", "{{lit}}"}, "b": map[string]any{"c": "{x}"}}
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("input mutated: %#v", in)
	}
}

func TestParseValueLiteralIsShared(t *testing.T) {
	t.Parallel()
	v, errs := ParseValue(map[string]any{"a": []any{"{{x}}", 1.0}})
	if errs != nil {
		t.Fatal(errs)
	}
	if !v.IsLiteral() {
		t.Fatal("IsLiteral() = false for a tree without placeholders")
	}
	a, _ := v.Render(nil)
	b, _ := v.Render(nil)
	if reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
		t.Error("literal tree was rebuilt; want the shared tree")
	}
	if want := map[string]any{"a": []any{"{x}", 1.0}}; !reflect.DeepEqual(a, want) {
		t.Errorf("Render = %#v, want %#v", a, want)
	}
}

func TestParseValueErrors(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"to":      []any{"ok", "{bad", "{}"},
		"a/b~c":   "}",
		"fine":    "{x}",
		"channel": make(chan int),
	}
	_, errs := ParseValue(in)
	var got []string
	for _, e := range errs {
		var se *SyntaxError
		if e.Pointer != "/channel" && !errors.As(e, &se) {
			t.Errorf("%s: error %v is not a *SyntaxError", e.Pointer, e.Err)
		}
		got = append(got, e.Pointer)
	}
	want := []string{"/a~1b~0c", "/channel", "/to/1", "/to/2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("error pointers = %v, want %v", got, want)
	}
	if msg := errs[1].Error(); !strings.Contains(msg, "unsupported value of type chan int") {
		t.Errorf("errs[1] = %q", msg)
	}
}

func TestValueRefs(t *testing.T) {
	t.Parallel()
	v, errs := ParseValue(map[string]any{"to": []any{"{a.b}", "x"}, "body": "{c} and {d[0]}"})
	if errs != nil {
		t.Fatal(errs)
	}
	var got []string
	for _, r := range v.Refs() {
		got = append(got, r.Pointer+" "+r.Path.String())
	}
	want := []string{"/body c", "/body d[0]", "/to/0 a.b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Refs() = %v, want %v", got, want)
	}
}

func TestValueRenderMissing(t *testing.T) {
	t.Parallel()
	v, errs := ParseValue(map[string]any{"to": []any{"x", "{who.email}"}})
	if errs != nil {
		t.Fatal(errs)
	}
	_, err := v.Render(map[string]any{"who": map[string]any{}})
	var ve *ValueError
	var re *RenderError
	if !errors.As(err, &ve) || !errors.As(err, &re) {
		t.Fatalf("error = %v, want *ValueError wrapping *RenderError", err)
	}
	if want := `/to/1: placeholder {who.email} at offset 0: field "email" not found in who (has: no fields)`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestPassthrough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want string
		ok   bool
	}{
		{"{extract}", "extract", true},
		{"{ a.b[0] }", "a.b[0]", true},
		{"x {a}", "", false},
		{map[string]any{"a": "{a}"}, "", false},
		{"plain", "", false},
	} {
		v, errs := ParseValue(tc.in)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		p, ok := v.Passthrough()
		if ok != tc.ok || (ok && p.String() != tc.want) {
			t.Errorf("Passthrough(%v) = %v, %v; want %q, %v", tc.in, p, ok, tc.want, tc.ok)
		}
	}
}

// TestJSONSizeWithinEightTimesCanonical: the measure of a value is at most
// 8 times its canonical JSON, the bound the engine relies on to skip
// measuring an upstream output it knows the canonical size of.
func TestJSONSizeWithinEightTimesCanonical(t *testing.T) {
	vals := []any{nil, true, false, "", "x", "a\"\\\n\u2028<>", 0.0, 1.0, -1.0, 9.0, 12.0, 1234567.0, 1e21, -1.2345678901234567e-308,
		0.1, 1e-7, []any{}, []any{true}, []any{0.0, 0.0, 0.0}, map[string]any{}, map[string]any{"": 0.0},
		map[string]any{"a": true, "b": []any{nil, 1e300}}, 7, map[string]string{"k": "v"}, []string{}, []any{1, 2, 3}, map[string]any{"": 1}}
	for _, v := range vals {
		vals = append(vals, []any{v, v}, map[string]any{"k": v})
	}
	for _, v := range vals {
		b, err := value.AppendCanonical(nil, v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if got := value.JSONSize(v, math.MaxInt64); got > 8*int64(len(b)) {
			t.Errorf("value.JSONSize(%#v) = %d, more than 8 × %d (%s)", v, got, len(b), b)
		}
	}
}
