package expression

import (
	"strings"

	"github.com/reinhq/rein/flow/ref"
)

// rewriteBraces replaces every "{ path }" whose content is a hyphen-free
// flow/ref path by the path, turning the two braces into spaces so that
// every other byte keeps its offset: an offset into the result is the same
// offset into src. Braces inside string literals and comments are left
// alone, and so are braces holding anything else (map literals, predicate
// bodies). A braced path with a hyphen is an *Error: inside expressions
// '-' is minus, so steps.send-email must be written steps["send-email"].
func rewriteBraces(src string) (string, error) {
	if strings.IndexByte(src, '{') < 0 {
		return src, nil
	}
	var out []byte // allocated on the first rewrite
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"', '\'', '`':
			i = skipString(src, i)
		case '/':
			i = skipComment(src, i)
		case '{':
			end := strings.IndexByte(src[i+1:], '}')
			if end < 0 {
				continue
			}
			end += i + 1
			body := strings.TrimSpace(src[i+1 : end])
			p, err := ref.Parse(body)
			if err != nil {
				continue
			}
			if strings.IndexByte(body, '-') >= 0 {
				return "", newError(src, i+1+strings.Index(src[i+1:end], body),
					"reference %s contains '-', which is minus in an expression; write %s", body, bracketed(p))
			}
			if out == nil {
				out = []byte(src)
			}
			out[i], out[end] = ' ', ' '
			i = end
		}
	}
	if out == nil {
		return src, nil
	}
	return string(out), nil
}

// bracketed formats p with hyphenated keys in ["..."] form. A hyphenated
// root cannot be written in an expression at all.
func bracketed(p ref.Path) string {
	if strings.IndexByte(p[0].Key, '-') >= 0 {
		return "a name without '-' (the root " + p[0].Key + " cannot be read from an expression)"
	}
	var b strings.Builder
	b.WriteString(p[0].Key)
	for _, s := range p[1:] {
		switch {
		case s.IsIndex:
			b.WriteString(ref.Path{{Key: "x"}, s}.String()[1:])
		case strings.IndexByte(s.Key, '-') >= 0:
			b.WriteString(`["` + s.Key + `"]`)
		default:
			b.WriteString("." + s.Key)
		}
	}
	return b.String()
}

// skipString returns the index of the closing quote of the string literal
// opened at src[i] (or the last index when it is unclosed).
func skipString(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j
		}
	}
	return len(src) - 1
}

// skipComment skips a // or /* */ comment starting at src[i], returning the
// index of its last byte; it returns i when src[i] starts no comment.
func skipComment(src string, i int) int {
	if i+1 >= len(src) {
		return i
	}
	switch src[i+1] {
	case '/':
		if end := strings.IndexByte(src[i:], '\n'); end >= 0 {
			return i + end
		}
		return len(src) - 1
	case '*':
		if end := strings.Index(src[i+2:], "*/"); end >= 0 {
			return i + 2 + end + 1
		}
		return len(src) - 1
	}
	return i
}
