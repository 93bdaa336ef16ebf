package redact

import (
	"regexp"
	"strings"
)

// minHold is the least a Stream holds back: a credential-shaped string
// (sk-…, ghp_…) is hidden only once it is whole.
const minHold = 64

// bearerEnd matches a text that ends where a bearer token would start.
var bearerEnd = regexp.MustCompile(`(?i)\bbearer\s+$`)

// Stream hides secrets in a text that arrives in pieces (a model's reply
// while it is written): Write takes each piece and passes on what can no
// longer be part of a secret, redacted as String would; Flush passes on
// the rest. What it holds back is the end of the text received so far,
// from the last whitespace that lies at least as many bytes before the end
// as the longest encoding of a known secret (and 64): a secret, a
// credential-shaped word or a bearer token split across pieces is hidden
// as in the whole text. A Stream is not safe for concurrent use.
type Stream struct {
	r    *Redactor
	emit func(string)
	hold int
	raw  string // received, not passed on
}

// Stream returns a Stream passing the redacted text to emit.
func (r *Redactor) Stream(emit func(text string)) *Stream {
	hold := minHold
	if r != nil {
		if len(r.folded) > 0 {
			hold = max(hold, len(r.folded[0]))
		}
		if len(r.exact) > 0 {
			hold = max(hold, len(r.exact[0]))
		}
	}
	return &Stream{r: r, emit: emit, hold: hold}
}

// Write takes the next piece of the text.
func (s *Stream) Write(text string) {
	s.raw += text
	if len(s.raw) <= s.hold {
		return
	}
	red := s.r.String(s.raw)
	cut := len(red) - s.hold
	if cut <= 0 {
		return
	}
	i := strings.LastIndexAny(red[:cut], " \t\r\n")
	if i < 0 {
		return // one long word so far: it may still become a credential
	}
	cut = i + 1
	if loc := bearerEnd.FindStringIndex(red[:cut]); loc != nil {
		cut = loc[0]
	}
	tail := red[cut:]
	if cut == 0 || !strings.HasSuffix(s.raw, tail) {
		return // a hidden secret in what is held back: wait for more
	}
	s.emit(red[:cut])
	s.raw = s.raw[len(s.raw)-len(tail):]
}

// Flush passes on what is held back, redacted: the text is complete.
func (s *Stream) Flush() {
	if s.raw != "" {
		s.emit(s.r.String(s.raw))
		s.raw = ""
	}
}

// Drop forgets what is held back without passing it on.
func (s *Stream) Drop() { s.raw = "" }
