package prefix

import "testing"

func TestEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, end string
		ok     bool
	}{
		{"01a2", "01a3", true},
		{"r0", "r1", true},
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"", "", false},
	} {
		end, ok := End(tc.p)
		if end != tc.end || ok != tc.ok {
			t.Errorf("End(%q) = %q, %v; want %q, %v", tc.p, end, ok, tc.end, tc.ok)
		}
		if ok && !(tc.p < end) {
			t.Errorf("End(%q) = %q is not greater", tc.p, end)
		}
	}
}
