package safety

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxVerifies bounds the entries of a tool's verifies:, and
// maxVerifiesBytes each entry.
const (
	MaxVerifies      = 64
	maxVerifiesBytes = 1024
)

// Wildcard is the pointer token of a verifies: entry that stands for every
// item of a list (every member of an object).
const Wildcard = "*"

// ParseVerifies reads one entry of a tool's verifies: (tool.Spec.Verifies)
// and returns it as a JSON pointer with its decoded tokens. An entry is a
// JSON pointer (RFC 6901: "/" before each token, "~0" for "~" and "~1" for
// "/") into the tool's output, such as /account/id or /items/*/id, where
// the token * stands for every item of a list (every member of an
// object); or the bare name of a top-level field (account_id, the same as
// /account_id). A token may not be empty, and a pointer names a field, not
// the whole output. The error says what is wrong and how to write it.
func ParseVerifies(entry string) (ptr string, tokens []string, err error) {
	switch {
	case strings.TrimSpace(entry) == "":
		return "", nil, fmt.Errorf("an empty entry: name a field of the tool's output, like account_id or /account/id")
	case len(entry) > maxVerifiesBytes:
		return "", nil, fmt.Errorf("is %d bytes, more than %d", len(entry), maxVerifiesBytes)
	case !strings.HasPrefix(entry, "/"):
		if strings.Contains(entry, "/") {
			return "", nil, fmt.Errorf("%q is neither a field name nor a JSON pointer: write /%s to name a nested field", cut(entry, 60), cut(entry, 60))
		}
		ptr := "/" + escapeToken(entry)
		if len(ptr) > maxVerifiesBytes {
			// its pointer, with ~ and / escaped, must read back as well.
			return "", nil, fmt.Errorf("is %d bytes as a JSON pointer (%q), more than %d", len(ptr), cut(ptr, 60), maxVerifiesBytes)
		}
		return ptr, []string{entry}, nil
	}
	for i, raw := range strings.Split(entry[1:], "/") {
		tok, ok := unescapeToken(raw)
		switch {
		case !ok:
			return "", nil, fmt.Errorf("pointer %q: token %d (%q) has a ~ not followed by 0 or 1: write ~0 for ~ and ~1 for /", cut(entry, 60), i+1, cut(raw, 40))
		case tok == "":
			return "", nil, fmt.Errorf("pointer %q: token %d is empty: name a field between each pair of /", cut(entry, 60), i+1)
		}
		tokens = append(tokens, tok)
	}
	return entry, tokens, nil
}

// unescapeToken decodes an RFC 6901 reference token; false when a ~ is
// not followed by 0 or 1.
func unescapeToken(s string) (string, bool) {
	if !strings.Contains(s, "~") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) || s[i+1] != '0' && s[i+1] != '1' {
			return "", false
		}
		if s[i+1] == '0' {
			b.WriteByte('~')
		} else {
			b.WriteByte('/')
		}
		i++
	}
	return b.String(), true
}

// fieldLeaves calls fn with the pointer and value of every scalar leaf of
// v at and below the field tokens name (see ParseVerifies), at being v's
// own pointer.
func fieldLeaves(v any, tokens []string, at string, fn func(ptr string, leaf any)) {
	if len(tokens) == 0 {
		walkLeaves(v, at, func(ptr string, leaf any) {
			switch leaf.(type) {
			case map[string]any, []any, nil, bool:
				return // an empty object or list, null and booleans verify nothing
			}
			fn(ptr, leaf)
		})
		return
	}
	tok, rest := tokens[0], tokens[1:]
	switch x := v.(type) {
	case map[string]any:
		if tok == Wildcard {
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fieldLeaves(x[k], rest, at+"/"+escapeToken(k), fn)
			}
			return
		}
		if e, ok := x[tok]; ok {
			fieldLeaves(e, rest, at+"/"+escapeToken(tok), fn)
		}
	case []any:
		if tok == Wildcard {
			for i, e := range x {
				fieldLeaves(e, rest, at+"/"+strconv.Itoa(i), fn)
			}
			return
		}
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(x) {
			fieldLeaves(x[i], rest, at+"/"+strconv.Itoa(i), fn)
		}
	}
}
