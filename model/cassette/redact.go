package cassette

import (
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces every secret the recorder writes.
const Redacted = "[REDACTED]"

// minSecret is the shortest environment value treated as a secret: shorter
// ones ("1", "true") would redact ordinary words.
const minSecret = 8

// tokenPatterns match strings shaped like credentials; they are redacted
// everywhere. A first group, when present, is kept.
var tokenPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\b(?:sk|rk|pk)-[A-Za-z0-9_-]{16,}`),                         // OpenAI, Anthropic (sk-ant-…), DeepSeek, …
	regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{30,}`),                                  // Google API keys
	regexp.MustCompile(`\b(?:ghp|gho|ghs|github_pat|xox[abpr])_[A-Za-z0-9_-]{16,}`), // GitHub, Slack
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
}

// headerPatterns match header- and parameter-like secrets (name: value,
// name=value); they are redacted in error messages, where provider SDKs
// echo request headers and URLs. The first group is kept.
var headerPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer\s+|basic\s+|token\s+)?)[^\s"',;&]+`),
	regexp.MustCompile(`(?i)(\b(?:x-)?(?:goog-)?(?:api[-_]?key|access[-_]?token|auth[-_]?token|secret|password|key)["']?\s*[:=]\s*["']?)[^\s"',;&]+`),
}

// redactor replaces secrets in what the recorder writes.
type redactor struct {
	values []string // longest first
}

// newRedactor takes the secrets of env ("NAME=value" pairs): the values of
// variables whose names say KEY, TOKEN, SECRET or PASSWORD.
func newRedactor(env []string) *redactor {
	var vals []string
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		upper := strings.ToUpper(name)
		for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
			if strings.Contains(upper, w) {
				vals = append(vals, val)
				break
			}
		}
	}
	return (&redactor{}).with(vals)
}

// with returns a redactor that also redacts vals.
func (r *redactor) with(vals []string) *redactor {
	out := &redactor{values: slices.Clone(r.values)}
	for _, v := range vals {
		if len(v) >= minSecret && !slices.Contains(out.values, v) {
			out.values = append(out.values, v)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	slices.SortStableFunc(out.values, func(a, b string) int { return len(b) - len(a) })
	return out
}

// text redacts the known values and token-shaped strings in s.
func (r *redactor) text(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	for _, p := range tokenPatterns {
		s = replaceKeeping(p, s)
	}
	return s
}

// errorText also redacts header- and parameter-like secrets.
func (r *redactor) errorText(s string) string {
	s = r.text(s)
	for _, p := range headerPatterns {
		s = replaceKeeping(p, s)
	}
	return s
}

func replaceKeeping(p *regexp.Regexp, s string) string {
	if p.NumSubexp() == 0 {
		return p.ReplaceAllLiteralString(s, Redacted)
	}
	return p.ReplaceAllString(s, "${1}"+Redacted)
}

// exchange redacts x in place: messages (tool call arguments and results
// included), reply, the reply's tool call arguments and error message. x
// must own its messages and tool calls.
func (r *redactor) exchange(x *Exchange) {
	for i := range x.Request.Messages {
		m := &x.Request.Messages[i]
		m.Content = r.text(m.Content)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Args = r.text(m.ToolCalls[j].Args)
		}
	}
	if x.Response != nil {
		x.Response.Text = r.text(x.Response.Text)
		for j := range x.Response.ToolCalls {
			x.Response.ToolCalls[j].Args = r.text(x.Response.ToolCalls[j].Args)
		}
	}
	if x.Error != nil {
		x.Error.Message = r.errorText(x.Error.Message)
	}
}
