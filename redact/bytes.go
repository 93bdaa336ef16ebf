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
