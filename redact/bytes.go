package redact

import (
	"strings"
	"unsafe"
)

// tokenMarks are substrings every credential-shaped string tokenPatterns
// match holds, as they are written (those patterns are case-sensitive),
// so that text holding none of them, nor "bearer" in any case, skips the
// regular expressions.
var tokenMarks = []string{"k-", "AIza", "ghp_", "gho_", "ghs_", "github_pat_", "xox"}

// Bytes is String for JSON text or any other bytes: it returns b itself,
// without allocating, when there is nothing to hide, and otherwise a new
// slice (b is never modified, so it may alias a value still in use).
func (r *Redactor) Bytes(b []byte) []byte {
	if len(b) == 0 || !r.Finds(unsafe.String(unsafe.SliceData(b), len(b))) {
		return b
	}
	return []byte(r.String(string(b)))
}

// Finds reports whether String would change s: whether s holds a known
// secret in one of its encodings or a credential-shaped string. It does
// not allocate, so callers on a hot path check before they copy.
func (r *Redactor) Finds(s string) bool {
	if s == "" {
		return false
	}
	if r != nil {
		for _, v := range r.folded {
			if indexFold(s, v) >= 0 {
				return true
			}
		}
		for _, v := range r.exact {
			if strings.Contains(s, v) {
				return true
			}
		}
	}
	marked := indexFold(s, "bearer") >= 0
	for i := 0; i < len(tokenMarks) && !marked; i++ {
		marked = strings.Contains(s, tokenMarks[i])
	}
	if !marked {
		return false
	}
	for _, p := range tokenPatterns {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}

// indexFold is the index of the first occurrence of low (ASCII lowercase)
// in s, ASCII letters compared in any case; -1 when there is none. It takes
// time linear in len(s)+len(low) whatever the input (see scanFold).
func indexFold(s, low string) int {
	i, _ := scanFold(s, low)
	return i
}

// foldTable is the room scanFold keeps on the stack for the failure table
// of a value; a longer value allocates its table.
const foldTable = 128

// scanFold is indexFold that also returns the number of steps its
// automaton took (a byte read or a fall back), which is at most 2·len(s):
// the bytes are skipped
// with IndexByte up to the next one that may start low (each byte is
// passed over once per case of low's first letter), and from there a
// Knuth-Morris-Pratt automaton reads each byte once until it matches or
// falls back to its start. So a text such as 800 KB of "b" against
// "bearer" is read once, not once per "b".
func scanFold(s, low string) (at, steps int) {
	m := len(low)
	if m == 0 {
		return 0, 0
	}
	if m > len(s) {
		return -1, 0
	}
	c := low[0]
	up := c
	if 'a' <= c && c <= 'z' {
		up = c - 'a' + 'A'
	}
	var buf [foldTable]int32
	var fail []int32 // low's failure table, built at the first candidate
	nextLo, nextUp := -1, -1
	if up == c {
		nextUp = len(s) // only one case to look for
	}
	for i := 0; i <= len(s)-m; {
		// the next byte at or after i that is c or up
		if nextLo < i {
			if k := strings.IndexByte(s[i:], c); k >= 0 {
				nextLo = i + k
			} else {
				nextLo = len(s)
			}
		}
		if nextUp < i {
			if k := strings.IndexByte(s[i:], up); k >= 0 {
				nextUp = i + k
			} else {
				nextUp = len(s)
			}
		}
		j := min(nextLo, nextUp)
		if j > len(s)-m {
			return -1, steps
		}
		if fail == nil {
			fail = buf[:0]
			if m > foldTable {
				fail = make([]int32, 0, m)
			}
			fail = failure(low, fail)
		}
		// the automaton, from j, until it matches or is back at its start
		q := 0
		for j < len(s) {
			b := s[j]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			steps++
			for q > 0 && b != low[q] {
				q = int(fail[q-1])
				steps++
			}
			if b == low[q] {
				q++
			}
			j++
			if q == m {
				return j - m, steps
			}
			if q == 0 {
				break
			}
		}
		if q > 0 {
			return -1, steps // s ended inside a partial match
		}
		i = j
	}
	return -1, steps
}

// failure appends to fail the Knuth-Morris-Pratt failure table of low:
// fail[k] is the length of the longest proper prefix of low[:k+1] that is
// also its suffix.
func failure(low string, fail []int32) []int32 {
	fail = append(fail, 0)
	q := 0
	for k := 1; k < len(low); k++ {
		for q > 0 && low[k] != low[q] {
			q = int(fail[q-1])
		}
		if low[k] == low[q] {
			q++
		}
		fail = append(fail, int32(q))
	}
	return fail
}

// equalFoldASCII reports whether s equals low (ASCII lowercase) with
// ASCII letters compared in any case.
func equalFoldASCII(s, low string) bool {
	for i := 0; i < len(low); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != low[i] {
			return false
		}
	}
	return true
}

// Ellipsis ends a text cut short (value.Preview).
const Ellipsis = "…"

// Cut is String for a text cut short, one that ends in Ellipsis (an
// event's preview): it also hides the start of a known secret (3 bytes or
// more of one of its encodings) that the cut left right before the
// ellipsis, which String cannot recognise.
func (r *Redactor) Cut(s string) string {
	s = r.String(s)
	body, ok := strings.CutSuffix(s, Ellipsis)
	if !ok || r == nil {
		return s
	}
	longest := max(cutStart(body, r.folded, equalFoldASCII), cutStart(body, r.exact, func(a, b string) bool { return a == b }))
	if longest == 0 {
		return s
	}
	return body[:len(body)-longest] + Mask + Ellipsis
}

// cutStart is the length of the longest start (3 bytes or more, short of
// the whole) of one of forms that body ends with, compared with eq; 0 when
// there is none.
func cutStart(body string, forms []string, eq func(tail, start string) bool) int {
	longest := 0
	for _, v := range forms {
		// from the longest start on: the first that matches is the one
		for j := max(0, len(body)-len(v)+1); j <= len(body)-3 && len(body)-j > longest; j++ {
			if k := len(body) - j; eq(body[j:], v[:k]) {
				longest = k
				break
			}
		}
	}
	return longest
}
