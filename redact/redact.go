package redact

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret a Redactor finds.
const Mask = "[REDACTED]"

// MinLen is the shortest value taken as a secret: shorter ones ("1",
// "true", "dev") would hide ordinary words and protect nothing.
const MinLen = 8

// tokenPatterns match strings shaped like credentials; they are hidden in
// every string. A first group, when present, is kept.
var tokenPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\b(?:sk|rk|pk)-[A-Za-z0-9_-]{16,}`),                         // OpenAI, Anthropic (sk-ant-…), DeepSeek, …
	regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{30,}`),                                  // Google API keys
	regexp.MustCompile(`\b(?:ghp|gho|ghs|github_pat|xox[abpr])_[A-Za-z0-9_-]{16,}`), // GitHub, Slack
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
}

// fieldPatterns match header- and parameter-like secrets (name: value,
// name=value), which provider SDKs and failing programs echo in error
// messages. The first group is kept. Message applies them; String does
// not, since in ordinary text they would hide words like "key: visible".
var fieldPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer\s+|basic\s+|token\s+)?)[^\s"',;&]+`),
	regexp.MustCompile(`(?i)(\b(?:x-)?(?:goog-)?(?:api[-_]?key|access[-_]?token|auth[-_]?token|secret|password|passwd|key)["']?\s*[:=]\s*["']?)[^\s"',;&]+`),
}

// Redactor hides known secret values and credential-shaped strings. A
// Redactor is immutable and safe for concurrent use; the nil *Redactor
// knows no values and still hides credential-shaped strings.
type Redactor struct {
	// folded are the case-insensitive forms of the secrets (forms: plain,
	// %-escaped, hex, JSON-escaped once and twice), ASCII-lowercased,
	// longest first.
	folded []string
	// exact are the forms whose case matters (base64 at every offset),
	// longest first.
	exact []string
	// secrets are the values as given, for With.
	secrets []string
}

// New returns a Redactor that hides secrets (values shorter than MinLen
// are ignored).
func New(secrets ...string) *Redactor { return (*Redactor)(nil).With(secrets...) }

// With returns a Redactor that also hides secrets; r is not changed.
func (r *Redactor) With(secrets ...string) *Redactor {
	out := &Redactor{}
	if r != nil {
		out.secrets = slices.Clone(r.secrets)
	}
	added := false
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= MinLen && !slices.Contains(out.secrets, s) {
			out.secrets = append(out.secrets, s)
			added = true
		}
	}
	if !added && r != nil {
		return r
	}
	for _, s := range out.secrets {
		folded, exact := forms(s)
		out.folded = appendNew(out.folded, folded...)
		out.exact = appendNew(out.exact, exact...)
	}
	// Longest first, so that a secret holding another is hidden whole.
	byLen := func(a, b string) int { return len(b) - len(a) }
	slices.SortStableFunc(out.folded, byLen)
	slices.SortStableFunc(out.exact, byLen)
	return out
}

// Join returns a Redactor that hides what r and o hide; neither is
// changed.
func (r *Redactor) Join(o *Redactor) *Redactor {
	if o == nil {
		return r
	}
	return r.With(o.secrets...)
}

// Len is the number of secret values r knows.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	return len(r.secrets)
}

// String returns s with every known secret, in any of its encodings, and
// every credential-shaped string replaced by Mask.
func (r *Redactor) String(s string) string {
	if !r.Finds(s) {
		return s
	}
	if r != nil {
		s = replaceFolded(s, r.folded)
		for _, v := range r.exact {
			if strings.Contains(s, v) {
				s = strings.ReplaceAll(s, v, Mask)
			}
		}
	}
	for _, p := range tokenPatterns {
		s = replaceKeeping(p, s)
	}
	return s
}

// Message is String for an error message: it also hides the values of
// header- and parameter-like fields (Authorization: …, api_key=…,
// password=…), which failing clients and programs echo.
func (r *Redactor) Message(s string) string {
	s = r.String(s)
	for _, p := range fieldPatterns {
		s = replaceKeeping(p, s)
	}
	return s
}

// replaceFolded replaces, case-insensitively, every occurrence of the
// lowercased values in s. ASCII folding keeps byte offsets, so the match
// positions in the folded copy are those in s.
func replaceFolded(s string, values []string) string {
	if len(values) == 0 {
		return s
	}
	low := lowerASCII(s)
	var b strings.Builder
	for _, v := range values {
		if !strings.Contains(low, v) {
			continue
		}
		b.Reset()
		last := 0
		for i := 0; ; {
			j := strings.Index(low[i:], v)
			if j < 0 {
				break
			}
			j += i
			b.WriteString(s[last:j])
			b.WriteString(Mask)
			last, i = j+len(v), j+len(v)
		}
		b.WriteString(s[last:])
		s = b.String()
		low = lowerASCII(s)
	}
	return s
}

func replaceKeeping(p *regexp.Regexp, s string) string {
	if p.NumSubexp() == 0 {
		return p.ReplaceAllLiteralString(s, Mask)
	}
	return p.ReplaceAllString(s, "${1}"+Mask)
}

// lowerASCII lowercases ASCII letters only, so the result has s's length.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// jsonEscape is s as it stands inside a JSON string, with or without
// encoding/json's HTML escapes.
func jsonEscape(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

func appendNew(list []string, vals ...string) []string {
	for _, v := range vals {
		if v != "" && !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}
