package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// printable returns s with its control characters (C0 but newline and tab,
// DEL, C1) escaped as \u00XX, and bytes that are not UTF-8 as \xXX, so
// that names, messages and outputs that come from flows, runs, tools and
// models cannot move the cursor, retitle or clear the terminal. \u00XX is
// also JSON's escape of the same character, so JSON text stays valid and
// means the same.
func printable(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return true
	}
	return false
}

// escapingWriter writes through printable. The CLI's stdout and stderr
// are wrapped in one; only the live progress view, which draws with escape
// sequences of its own, writes to the terminal directly.
type escapingWriter struct{ w io.Writer }

// Write writes p escaped and reports len(p) on success.
func (e escapingWriter) Write(p []byte) (int, error) {
	s := printable(string(p))
	if _, err := io.WriteString(e.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
