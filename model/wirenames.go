package model

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"
)

// ValidToolName reports whether providers accept name as a tool's name:
// 1 to 64 ASCII letters, digits, _ or - (^[a-zA-Z0-9_-]{1,64}$).
func ValidToolName(name string) bool { return validToolName(name) }

// WireNames gives each of names (distinct tool names, such as an MCP
// server's "crm.find_customer") the name a model is offered and calls it
// by: the name itself when ValidToolName accepts it; otherwise the name
// with each "." written "__" and every other character outside
// [A-Za-z0-9_-] written "_" ("crm__find_customer"). When that is longer
// than 64 bytes, or another tool has it already, it is cut and ends with
// "_" and the first hex digits of the name's sha256, so it is stable and
// unique. out[i] is names[i]'s; the result depends only on the set of
// names, not on their order.
func WireNames(names []string) []string {
	out := make([]string, len(names))
	taken := make(map[string]bool, len(names))
	var mapped []int
	for i, n := range names {
		if validToolName(n) {
			out[i] = n
			taken[n] = true
			continue
		}
		mapped = append(mapped, i)
	}
	slices.SortFunc(mapped, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range mapped {
		w := wireName(names[i], taken)
		out[i] = w
		taken[w] = true
	}
	return out
}

// wireName is name spelled as ValidToolName wants it, unique among taken.
func wireName(name string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '.':
			b.WriteString("__")
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base != "" && len(base) <= maxToolName && !taken[base] {
		return base
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])
	for n := 8; ; n += 8 {
		suffix := "_" + h[:n]
		w := base
		if len(w) > maxToolName-len(suffix) {
			w = w[:maxToolName-len(suffix)]
		}
		if w += suffix; !taken[w] || n >= len(h)-8 {
			return w
		}
	}
}

// maxToolName is the longest tool name providers accept.
const maxToolName = 64
