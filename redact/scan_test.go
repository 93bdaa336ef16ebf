package redact

import (
	"strings"
	"testing"
)

// FuzzScanFoldLinear: scanFold finds what a plain search of the lowercased
// text finds, and its automaton takes at most 2 steps per byte of the
// text, whatever the text and the value: the scan is linear, so no input
// (800 KB of "b" against "bearer" took 5 s when it was quadratic) can make
// the redactor slow.
func FuzzScanFoldLinear(f *testing.F) {
	f.Add("b", 100000, "bearer")
	f.Add("aab", 5000, "aabaabaaa")
	f.Add("Bb", 30000, "bbbbbbbbbbbbx")
	f.Add("xY", 1, "xyxyxyxyxyz")
	f.Fuzz(func(t *testing.T, unit string, n int, value string) {
		if unit == "" || n < 1 || n > 1<<20/len(unit) || len(value) > 4096 {
			return
		}
		low := lowerASCII(value)
		s := strings.Repeat(unit, n)
		at, steps := scanFold(s, low)
		if want := strings.Index(lowerASCII(s), low); at != want {
			t.Fatalf("scanFold(%q×%d, %q) = %d, want %d", unit, n, low, at, want)
		}
		if steps > 2*len(s) {
			t.Fatalf("scanFold(%q×%d, %q) took %d steps over %d bytes: more than 2 per byte", unit, n, low, steps, len(s))
		}
	})
}
