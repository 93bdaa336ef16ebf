package value

import (
	"encoding/json"
	"math"
	"testing"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{map[string]any{"b": 1.0, "a": []any{true, "x"}}, `{"a":[true,"x"],"b":1}`},
		{64.4, `64.4`},
		{1e21, `1e+21`},
		{"q\"\\\n\t\x01<é", `"q\"\\\n\t\u0001<é"`},
		{"\xff", `"\ufffd"`},
		{struct{ A int }{3}, `{"A":3}`},
	} {
		got, err := Canonical(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Canonical(math.NaN()); err == nil {
		t.Error("NaN must not encode")
	}
}

func TestCanonicalMatchesEncodingJSONOnDecodedValues(t *testing.T) {
	t.Parallel()
	src := `{"z":{"y":[1,2.5,"s",null,false]},"a":"<&>","m":-0.000001}`
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	got, _ := Canonical(v)
	var back any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("canonical form is not JSON: %s", got)
	}
	again, _ := Canonical(back)
	if string(again) != string(got) {
		t.Fatalf("not stable: %s vs %s", got, again)
	}
}

func TestDigestAndPreview(t *testing.T) {
	t.Parallel()
	if d := Digest([]byte(`{"k":"v"}`)); d != "666c1aa02e8068c6d5cc1d3295009432c16790bec28ec8ce119d0d1a18d61319" {
		t.Fatalf("digest %s", d)
	}
	if p := Preview([]byte("ééé"), 3); p != "é…" {
		t.Fatalf("preview cut inside a rune: %q", p)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	m := map[string]any{"a": 1.0}
	got, err := Normalize(m)
	if err != nil || got.(map[string]any)["a"] != 1.0 {
		t.Fatal(got, err)
	}
	got, err = Normalize(struct {
		N int `json:"n"`
	}{4})
	if err != nil || got.(map[string]any)["n"] != 4.0 {
		t.Fatalf("struct: %v %v", got, err)
	}
	if got, _ := Normalize(7); got != 7.0 {
		t.Fatalf("int: %v", got)
	}
	if _, err := Normalize(map[string]any{"x": math.Inf(1)}); err == nil {
		t.Fatal("Inf must be rejected")
	}
}
