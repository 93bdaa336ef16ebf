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
// in s, ASCII letters compared in any case; -1 when there is none.
func indexFold(s, low string) int {
	if len(low) == 0 {
		return 0
	}
	c := low[0]
	up := c
	if 'a' <= c && c <= 'z' {
		up = c - 'a' + 'A'
	}
	for i := 0; i+len(low) <= len(s); {
		j := strings.IndexByte(s[i:len(s)-len(low)+1], c)
		if up != c {
			if k := strings.IndexByte(s[i:len(s)-len(low)+1], up); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		i += j
		if equalFoldASCII(s[i+1:i+len(low)], low[1:]) {
			return i
		}
		i++
	}
	return -1
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
