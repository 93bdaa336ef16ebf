package safety

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/reinhq/rein/tool"
)

// MinMatchLen is the fewest characters (runes, after normalising) a value
// must have to be found in a source: shorter values ("1", "EU", true) are
// too common to say where they came from, so they stay inferred.
const MinMatchLen = 3

// source is one recorded body a value may be found in: the user's input,
// or the output of one tool call of the run. Its text is worked out the
// first time it is searched, so recording costs next to nothing.
type source struct {
	// origin is OriginUser, or the tool's ToolOrigin (tool:<name>, db).
	origin Origin
	// free marks the user's free text (a task, a message): a value found
	// in it is user-mentioned, never user.
	free bool
	// tool names the tool ("" for the user's input); verifies are its
	// source-of-truth fields (tool.Spec.Verifies), whatever its effect.
	tool     string
	verifies []string
	// ref says where it was recorded: "input", "history/2", "step lookup",
	// "turn2/call1", "plan step s1".
	ref string

	once sync.Once
	raw  any    // the value
	obs  string // or an observation's text, read as JSON when it is JSON
	text string // normalised leaves, one per line
	// whole holds the normalised leaves of the user's structured input;
	// truth maps the normalised value of each leaf at a field the tool
	// verifies to that field's pointer (the first, in verifies: order).
	whole map[string]struct{}
	truth map[string]string
}

// body returns the normalised leaves of s, one per line.
func (s *source) body() string {
	s.load()
	return s.text
}

// load works out s's text, and its whole leaves or source-of-truth values.
func (s *source) load() {
	s.once.Do(func() {
		v := s.raw
		if s.obs != "" {
			if json.Unmarshal([]byte(s.obs), &v) != nil {
				v = s.obs // a cut observation is text: no field of it verifies anything
			}
		}
		var b strings.Builder
		appendLeaves(&b, v)
		s.text = b.String()
		switch {
		case s.origin == OriginUser && !s.free:
			s.whole = map[string]struct{}{}
			walkLeaves(v, "", func(_ string, leaf any) {
				if t := matchText(leaf); t != "" {
					s.whole[t] = struct{}{}
				}
			})
		case s.origin.IsTool() && len(s.verifies) > 0:
			s.truth = map[string]string{}
			for _, entry := range s.verifies {
				_, toks, err := ParseVerifies(entry)
				if err != nil {
					continue // refused when the tool was declared; a Go tool's bad entry verifies nothing
				}
				fieldLeaves(v, toks, "", func(ptr string, leaf any) {
					if t := matchText(leaf); t != "" {
						if _, dup := s.truth[t]; !dup {
							s.truth[t] = ptr
						}
					}
				})
			}
		}
	})
}

// holds returns the pointer of the source-of-truth field of s that holds
// the value whose text is t.
func (s *source) holds(t string) (string, bool) {
	s.load()
	ptr, ok := s.truth[t]
	return ptr, ok
}

// Evidence is what a run has recorded that a model-written value may be
// traced to: the user's input and the tool outputs so far, in the order
// they were recorded. Matching is deterministic:
//
//   - a value is a JSON scalar: a string is normalised (lower case, runs
//     of white space as one space, trimmed), a number is its shortest
//     decimal text; true, false and null are never found;
//   - quotes around a value are dropped ("\"eu-west\"" is eu-west);
//   - a value shorter than MinMatchLen runes is never found;
//   - a source is normalised the same way, leaf by leaf (a JSON source's
//     strings and numbers, a text source's whole text);
//   - a value is user when it equals a whole leaf of the user's structured
//     input (AddUser), and user-mentioned when it is only found inside the
//     user's text: a leaf of the input it does not equal, or free text
//     (AddUserText: a task, a message). It is found in a text when it
//     occurs there with no letter or digit right before or after, nor a
//     '.' or ',' that continues a number (so "1234" is not found in
//     "12345" nor in "1234.5", and "acme corp" is found in "Onboard ACME
//     Corp.");
//   - a value is verified (Verify) only when it equals a leaf at a field
//     a tool declares as a source of truth (tool.Spec.Verifies) in an
//     output of that tool: text that merely contains it (a description, a
//     note, a message an attacker wrote) verifies nothing, and a tool
//     without verifies: verifies nothing.
//
// The zero value is empty and ready; it is safe for concurrent use.
type Evidence struct {
	mu   sync.RWMutex
	srcs []*source
}

// AddUser records v (the run's structured input) as the user's: a value
// equal to one of its leaves is user. v is shared, not copied, and must
// not change.
func (e *Evidence) AddUser(ref string, v any) {
	e.add(&source{origin: OriginUser, ref: ref, raw: v})
}

// AddUserText records text the user wrote freely (an agent's task, a
// chat message): a value found in it is user-mentioned, never user.
func (e *Evidence) AddUserText(ref, text string) {
	e.add(&source{origin: OriginUser, free: true, ref: ref, raw: text})
}

// AddTool records out, the output of a call of spec's tool. out is shared,
// not copied, and must not change.
func (e *Evidence) AddTool(ref string, spec *tool.Spec, out any) {
	e.add(&source{origin: ToolOrigin(spec), tool: spec.Name, verifies: spec.Verifies, ref: ref, raw: out})
}

// AddObservation records what a model was shown of a call of spec's tool:
// the observation text, read as JSON when it is JSON (a cut observation
// is text, and verifies nothing).
func (e *Evidence) AddObservation(ref string, spec *tool.Spec, text string) {
	e.add(&source{origin: ToolOrigin(spec), tool: spec.Name, verifies: spec.Verifies, ref: ref, obs: text})
}

// Grow makes room for n more sources.
func (e *Evidence) Grow(n int) {
	e.mu.Lock()
	e.srcs = slices.Grow(e.srcs, n)
	e.mu.Unlock()
}

func (e *Evidence) add(s *source) {
	e.mu.Lock()
	e.srcs = append(e.srcs, s)
	e.mu.Unlock()
}

// ForReview returns what a reviewer may see of e: the user's part (the
// value of the one source "input", or with several — a chat's messages —
// each by its ref) and the tool results, oldest first. Values are shared,
// not copied; an observation is its text.
func (e *Evidence) ForReview() (input any, results []ToolResult) {
	if e == nil {
		return nil, nil
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	var user map[string]any
	for _, s := range e.srcs {
		out := s.raw
		if s.obs != "" {
			out = s.obs
		}
		if s.origin != OriginUser {
			results = append(results, ToolResult{Tool: s.tool, Output: out})
			continue
		}
		if input == nil && user == nil {
			input = out
			if s.ref != "input" {
				user = map[string]any{s.ref: out}
			}
			continue
		}
		if user == nil {
			user = map[string]any{"input": input}
		}
		user[s.ref] = out
	}
	if user != nil {
		input = user
	}
	return input, results
}

// Len returns how many sources e holds.
func (e *Evidence) Len() int {
	if e == nil {
		return 0
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.srcs)
}

func appendLeaves(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			appendLeaves(b, x[k])
		}
	case []any:
		for _, e := range x {
			appendLeaves(b, e)
		}
	default:
		if t := scalarText(v); t != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t)
		}
	}
}

// scalarText is the normalised text of a scalar, "" for anything else.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return normalise(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// normalise lowers s and collapses each run of white space (newlines
// included) to one space.
func normalise(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// findIn reports whether needle occurs in hay with no letter or digit
// right before or after it. A leaf of hay never contains '\n' after
// normalising, so a line break is a boundary.
func findIn(hay, needle string) bool {
	for off := 0; ; {
		i := strings.Index(hay[off:], needle)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(needle)
		if boundaryBefore(hay[:i]) && boundaryAfter(hay[end:]) {
			return true
		}
		_, w := utf8.DecodeRuneInString(hay[i:])
		off = i + w
	}
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// boundaryBefore reports whether a match may start after s: s is empty or
// ends in neither a letter, a digit, nor a '.' or ',' right after a digit
// (so "234" is not found in "1.234").
func boundaryBefore(s string) bool {
	r, w := utf8.DecodeLastRuneInString(s)
	if s == "" {
		return true
	}
	if r == '.' || r == ',' {
		p, _ := utf8.DecodeLastRuneInString(s[:len(s)-w])
		return !unicode.IsDigit(p)
	}
	return !isWord(r)
}

// boundaryAfter is boundaryBefore for what follows a match.
func boundaryAfter(s string) bool {
	r, w := utf8.DecodeRuneInString(s)
	if s == "" {
		return true
	}
	if r == '.' || r == ',' {
		n, _ := utf8.DecodeRuneInString(s[w:])
		return !unicode.IsDigit(n)
	}
	return !isWord(r)
}

// quotes are trimmed from a value before it is matched: a model often
// quotes what it copies.
const quotes = "\"'`“”‘’ "

// matchText is the normalised text of v that may be matched, without
// surrounding quotes; "" when v is not a scalar or too short.
func matchText(v any) string {
	t := strings.Trim(scalarText(v), quotes)
	if utf8.RuneCountInString(t) < MinMatchLen {
		return ""
	}
	return t
}

// find returns the sources (in recording order) whose text contains t
// and that satisfy keep (nil: any).
func (e *Evidence) find(t string, keep func(*source) bool) []*source {
	if t == "" {
		return nil
	}
	var out []*source
	for _, s := range e.sources() {
		if (keep == nil || keep(s)) && findIn(s.body(), t) {
			out = append(out, s)
		}
	}
	return out
}

// Trace returns the provenance of args written by a model: each scalar
// leaf equal to a whole leaf of the user's structured input is user, one
// found only inside the user's text user-mentioned, any other inferred
// (a tool's output gives no origin here: whether it confirms a value is
// Verify's). Pointers name leaves (RFC 6901); an empty object or list is
// a leaf with no value, inferred.
func (e *Evidence) Trace(args any) Provenance {
	out := Provenance{}
	walkLeaves(args, "", func(ptr string, v any) { e.AddOrigins(out, ptr, v) })
	return out
}

// Inferred is the provenance of args a model wrote with nothing to check
// them against: every leaf inferred (Trace without evidence).
func Inferred(args any) Provenance {
	var none *Evidence
	return none.Trace(args)
}

// AddOrigins adds to p at ptr the origin of the scalar v written by a
// model: user, user-mentioned or inferred (see Trace).
func (e *Evidence) AddOrigins(p Provenance, ptr string, v any) {
	p.Add(ptr, e.originOf(matchText(v)))
}

// originOf is the origin of a model-written value whose text is t.
func (e *Evidence) originOf(t string) Origin {
	out := OriginInferred
	if t == "" {
		return out
	}
	for _, s := range e.sources() {
		if s.origin != OriginUser {
			continue
		}
		s.load()
		if _, ok := s.whole[t]; ok {
			return OriginUser
		}
		if findIn(s.text, t) {
			out = OriginUserMentioned
		}
	}
	return out
}

// sources returns the sources recorded so far, oldest first.
func (e *Evidence) sources() []*source {
	if e == nil {
		return nil
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.srcs[:len(e.srcs):len(e.srcs)]
}

// Include appends the sources of o (recorded elsewhere in the run) to e.
func (e *Evidence) Include(o *Evidence) {
	if o == nil || o == e {
		return
	}
	o.mu.RLock()
	srcs := slices.Clone(o.srcs)
	o.mu.RUnlock()
	e.mu.Lock()
	e.srcs = append(e.srcs, srcs...)
	e.mu.Unlock()
}

// Verification says that a tool result of the run confirms an argument a
// model wrote: every leaf at and below Pointer equals a value at a
// source-of-truth field (tool.Spec.Verifies) of the output of Tool
// recorded at Ref; Field is the output pointer that holds the first.
type Verification struct {
	Pointer string `json:"pointer"`
	Tool    string `json:"tool"`
	Ref     string `json:"ref"`
	Field   string `json:"field,omitempty"`
}

// Verify returns, for each pointer of prov with an inferred or
// user-mentioned origin, the tool result of e that confirms the value of
// args there, sorted by pointer. A pointer is confirmed when every scalar
// leaf at and below it equals (see Evidence) a value at a field one tool
// verifies, in one output of it; an empty value, a leaf too short to be
// found, or one that only occurs inside a text, is not.
func (e *Evidence) Verify(args any, prov Provenance) []Verification {
	if e.Len() == 0 || !prov.hasUnsourced() {
		return nil
	}
	var out []Verification
	for _, ptr := range prov.Pointers() {
		if !slices.ContainsFunc(prov[ptr], Origin.Unsourced) {
			continue
		}
		v, ok := lookupPointer(args, ptr)
		if !ok {
			continue
		}
		if s, field := e.confirming(v); s != nil {
			out = append(out, Verification{Pointer: ptr, Tool: s.tool, Ref: s.ref, Field: field})
		}
	}
	return out
}

// hasUnsourced reports whether some pointer of p has an inferred or
// user-mentioned origin.
func (p Provenance) hasUnsourced() bool {
	for _, os := range p {
		if slices.ContainsFunc(os, Origin.Unsourced) {
			return true
		}
	}
	return false
}

// confirming returns the first tool source whose source-of-truth fields
// hold every leaf of v, and the field of the first leaf; nil if none.
func (e *Evidence) confirming(v any) (*source, string) {
	var texts []string
	empty := false
	walkLeaves(v, "", func(_ string, leaf any) {
		t := matchText(leaf)
		if t == "" {
			empty = true
		}
		texts = append(texts, t)
	})
	if empty || len(texts) == 0 {
		return nil, ""
	}
	for _, s := range e.sources() {
		if !s.origin.IsTool() || len(s.verifies) == 0 {
			continue
		}
		field, ok := s.holds(texts[0])
		if !ok {
			continue
		}
		all := true
		for _, t := range texts[1:] {
			if _, ok := s.holds(t); !ok {
				all = false
				break
			}
		}
		if all {
			return s, field
		}
	}
	return nil, ""
}

// walkLeaves calls fn with the pointer and value of every leaf of v:
// scalars, and empty objects and lists.
func walkLeaves(v any, ptr string, fn func(ptr string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			fn(ptr, x)
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walkLeaves(x[k], ptr+"/"+escapeToken(k), fn)
		}
	case []any:
		if len(x) == 0 {
			fn(ptr, x)
			return
		}
		for i, e := range x {
			walkLeaves(e, ptr+"/"+strconv.Itoa(i), fn)
		}
	default:
		fn(ptr, v)
	}
}

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// lookupPointer returns the value of v at the RFC 6901 pointer ptr.
func lookupPointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
