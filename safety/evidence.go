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
	// tool names the tool ("" for the user's input); effect is its effect.
	tool   string
	effect tool.Effect
	// ref says where it was recorded: "input", "history/2", "step lookup",
	// "turn2/call1", "plan step s1".
	ref string

	once sync.Once
	raw  any    // the value
	obs  string // or an observation's text, read as JSON when it is JSON
	text string // normalised leaves, one per line
}

// body returns the normalised leaves of s, one per line.
func (s *source) body() string {
	s.once.Do(func() {
		v := s.raw
		if s.obs != "" {
			if json.Unmarshal([]byte(s.obs), &v) != nil {
				v = s.obs
			}
		}
		var b strings.Builder
		appendLeaves(&b, v)
		s.text = b.String()
	})
	return s.text
}

// confirms reports whether a match in s verifies a value: s is the output
// of a tool that only reads or computes (effect read or none).
func (s *source) confirms() bool {
	return s.origin.IsTool() && (s.effect == "" || s.effect == tool.EffectNone || s.effect == tool.EffectRead)
}

// Evidence is what a run has recorded that a model-written value may be
// found in: the user's input and the tool outputs so far, in the order
// they were recorded. Matching is deterministic:
//
//   - a value is a JSON scalar: a string is normalised (lower case, runs
//     of white space as one space, trimmed), a number is its shortest
//     decimal text; true, false and null are never found;
//   - quotes around a value are dropped ("\"eu-west\"" is eu-west);
//   - a value shorter than MinMatchLen runes is never found;
//   - a source is normalised the same way, leaf by leaf (a JSON source's
//     strings and numbers, a text source's whole text);
//   - a value is found in a source when its text occurs in a leaf of it
//     with no letter or digit right before or after, nor a '.' or ','
//     that continues a number (so "1234" is not found in "12345" nor in
//     "1234.5", and "acme corp" is found in "Onboard ACME Corp.").
//
// The zero value is empty and ready; it is safe for concurrent use.
type Evidence struct {
	mu   sync.RWMutex
	srcs []*source
}

// AddUser records v (the run's input, a user message) as the user's. v is
// shared, not copied, and must not change.
func (e *Evidence) AddUser(ref string, v any) {
	e.add(&source{origin: OriginUser, ref: ref, raw: v})
}

// AddTool records out, the output of a call of spec's tool. out is shared,
// not copied, and must not change.
func (e *Evidence) AddTool(ref string, spec *tool.Spec, out any) {
	e.add(&source{origin: ToolOrigin(spec), tool: spec.Name, effect: spec.Effect, ref: ref, raw: out})
}

// AddObservation records what a model was shown of a call of spec's tool:
// the observation text, read as JSON when it is JSON.
func (e *Evidence) AddObservation(ref string, spec *tool.Spec, text string) {
	e.add(&source{origin: ToolOrigin(spec), tool: spec.Name, effect: spec.Effect, ref: ref, obs: text})
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

// find returns the sources (in recording order) that hold the text t and
// satisfy keep (nil: any).
func (e *Evidence) find(t string, keep func(*source) bool) []*source {
	if e == nil || t == "" {
		return nil
	}
	e.mu.RLock()
	srcs := e.srcs[:len(e.srcs):len(e.srcs)]
	e.mu.RUnlock()
	var out []*source
	for _, s := range srcs {
		if (keep == nil || keep(s)) && findIn(s.body(), t) {
			out = append(out, s)
		}
	}
	return out
}

// Trace returns the provenance of args written by a model: each scalar
// leaf found in the user's input is user, found in a tool output tool:<name>
// (or db), both when found in both; a leaf found nowhere (or too short to
// be found) is inferred. Pointers name leaves (RFC 6901); an empty object
// or list is a leaf with no value, inferred.
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

// AddOrigins adds to p at ptr the origins of the scalar v written by a
// model: those of the sources it is found in, or inferred.
func (e *Evidence) AddOrigins(p Provenance, ptr string, v any) {
	srcs := e.find(matchText(v), nil)
	if len(srcs) == 0 {
		p.Add(ptr, OriginInferred)
		return
	}
	for _, s := range srcs {
		p.Add(ptr, s.origin)
	}
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

// Verification says that a tool result of the run confirms an inferred
// argument: every leaf at and below Pointer was found in the output of
// Tool (effect read or none) recorded at Ref.
type Verification struct {
	Pointer string `json:"pointer"`
	Tool    string `json:"tool"`
	Ref     string `json:"ref"`
}

// Verify returns, for each pointer of prov with an inferred origin, the
// tool result of e that confirms the value of args there, sorted by
// pointer. A pointer is confirmed when every scalar leaf at and below it
// is found (see Evidence) in the output of one tool whose effect is read
// or none; an empty value, or a leaf too short to be found, is not.
func (e *Evidence) Verify(args any, prov Provenance) []Verification {
	if e.Len() == 0 || !prov.hasInferred() {
		return nil
	}
	var out []Verification
	for _, ptr := range prov.Pointers() {
		if !slices.Contains(prov[ptr], OriginInferred) {
			continue
		}
		v, ok := lookupPointer(args, ptr)
		if !ok {
			continue
		}
		if s := e.confirming(v); s != nil {
			out = append(out, Verification{Pointer: ptr, Tool: s.tool, Ref: s.ref})
		}
	}
	return out
}

// hasInferred reports whether some pointer of p has an inferred origin.
func (p Provenance) hasInferred() bool {
	for _, os := range p {
		if slices.Contains(os, OriginInferred) {
			return true
		}
	}
	return false
}

// confirming returns the first confirming source that holds every leaf of
// v, or nil.
func (e *Evidence) confirming(v any) *source {
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
		return nil
	}
	for _, s := range e.find(texts[0], (*source).confirms) {
		all := true
		for _, t := range texts[1:] {
			if !findIn(s.body(), t) {
				all = false
				break
			}
		}
		if all {
			return s
		}
	}
	return nil
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
