package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/redact"
)

// The bounds of an error's cause chain (Chain): at most ChainLinks links,
// ChainDepth levels of wrapping, CauseBytes of each link's message and of
// its detail, ChainBytes in all. What is left out is said in a last link
// of type "cut".
const (
	ChainLinks = 16
	ChainDepth = 8
	CauseBytes = 1 << 10
	ChainBytes = 8 << 10
)

// Cause is one link of a failed attempt's cause chain (Event.Chain), from
// the error the step returned (depth 0) down to the errors it wraps
// (errors.Unwrap) or joins (errors.Join: each at the next depth).
type Cause struct {
	// Depth is how many wrappings lie above this link.
	Depth int `json:"depth,omitempty"`
	// Type is the Go type of the error ("*fs.PathError"), "cut" for the
	// link that says what the bounds left out.
	Type string `json:"type"`
	// Class is the fault class a *fault.Error link gives.
	Class string `json:"class,omitempty"`
	// Message is what this link adds to the message of the one it wraps:
	// its whole message for a leaf or a join, its prefix ("step fetch")
	// for a link whose message is "prefix: wrapped", empty for a link that
	// only classes or carries (a fault class, a detail).
	Message string `json:"message,omitempty"`
	// DetailKind and Detail are what a fault.Detailed link carries: the
	// tail of a tool's stderr (fault.DetailStderr), the body of a
	// provider's error answer (fault.DetailResponseBody).
	DetailKind string `json:"detail_kind,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// Chain returns the cause chain of err, bounded (ChainLinks, ChainDepth,
// CauseBytes, ChainBytes) and redacted with red before anything is cut,
// so no cut leaves part of a secret. Links that add nothing (a wrapper
// with the same message, no class and no detail) are left out; nil for a
// nil err.
func Chain(err error, red *redact.Redactor) []Cause {
	if err == nil {
		return nil
	}
	w := chainWalker{red: red, left: ChainBytes}
	w.walk(err, 0)
	if w.cut > 0 {
		w.out = append(w.out, Cause{Type: "cut", Message: fmt.Sprintf("%d causes left out, with what they wrap (a chain keeps %d links, %d levels, %d bytes)",
			w.cut, ChainLinks, ChainDepth, ChainBytes)})
	}
	return w.out
}

type chainWalker struct {
	red  *redact.Redactor
	out  []Cause
	left int // bytes left
	cut  int // links left out
	// details are the details met so far, redacted: a message below
	// the link that carries one says "(detail)" in its place.
	details []string
	// steps counts the errors looked at, kept or not: a chain of wrappers
	// that add nothing is walked this far at most.
	steps int
}

func (w *chainWalker) walk(err error, depth int) {
	if err == nil {
		return
	}
	w.steps++
	if depth >= ChainDepth || len(w.out) >= ChainLinks || w.left <= 0 || w.steps > 4*ChainLinks {
		w.cut++
		return
	}
	c := Cause{Depth: depth, Type: fmt.Sprintf("%T", err)}
	if fe, ok := err.(*fault.Error); ok { //nolint:errorlint // this link itself, not its chain: the walk visits each
		c.Class = string(fe.Class)
	}
	if d, ok := err.(fault.Detailed); ok { //nolint:errorlint // this link itself, not its chain
		var text string
		c.DetailKind, text = d.ErrorDetail()
		if text = w.red.String(text); text != "" {
			w.details = append(w.details, text)
		}
		if c.DetailKind == fault.DetailStderr {
			c.Detail = tailCut(text, CauseBytes)
		} else {
			c.Detail = headCut(text, CauseBytes)
		}
	}
	msg := w.message(err)
	var kids []error
	switch u := err.(type) { //nolint:errorlint // what this link wraps, one level
	case interface{ Unwrap() []error }:
		kids = u.Unwrap()
	case interface{ Unwrap() error }:
		if k := u.Unwrap(); k != nil {
			kids = []error{k}
			inner := w.message(k)
			switch {
			case msg == inner:
				msg = ""
			case strings.HasSuffix(msg, ": "+inner):
				msg = strings.TrimSuffix(msg, ": "+inner)
			}
		}
	}
	c.Message = headCut(msg, CauseBytes)
	if c.Message == "" && c.Class == "" && c.Detail == "" && len(kids) == 1 {
		w.walk(kids[0], depth) // a wrapper that adds nothing
		return
	}
	size := len(c.Type) + len(c.Message) + len(c.Detail)
	if size > w.left {
		w.cut++
		return
	}
	w.left -= size
	w.out = append(w.out, c)
	for _, k := range kids {
		w.walk(k, depth+1)
	}
}

// message is err's message, redacted, with the details met so far
// replaced by "(detail)": an exec tool's message quotes the stderr tail
// its link carries.
func (w *chainWalker) message(err error) string {
	msg := w.red.String(err.Error())
	for _, d := range w.details {
		msg = strings.ReplaceAll(msg, d, "(detail)")
	}
	return msg
}

// headCut is s cut to at most n bytes on a rune boundary, ending in
// redact.Ellipsis when it was cut.
func headCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len(redact.Ellipsis)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + redact.Ellipsis
}

// tailCut is the end of s in at most n bytes on a rune boundary, starting
// with redact.Ellipsis when it was cut.
func tailCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n + len(redact.Ellipsis)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return redact.Ellipsis + s[i:]
}

// appendChain appends l as encoding/json writes it (without HTML escapes).
func appendChain(dst []byte, l []Cause) []byte {
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(l) // strings and ints only: it cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
