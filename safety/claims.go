package safety

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reinhq/rein/value"
)

// Limits of a declaration, enforced by ParseDeclaration.
const (
	// MaxClaims bounds facts, assumptions and side_effects, each.
	MaxClaims = 32
	// MaxClaimBytes bounds each string of a declaration.
	MaxClaimBytes = 2000
)

// Problem is one thing wrong with model output (a declaration, a plan):
// where (an RFC 6901 JSON pointer, "" for the whole document) and what.
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return "at " + ptr + ": " + p.Message
}

// DeclarationSchema is the JSON Schema (draft 2020-12) of a declaration,
// as a model is shown it: the `declaration` argument agents' side-effecting
// tools gain, and a plan step's `declaration` field.
const DeclarationSchema = `{"type":"object","description":"Before a call with side effects: what you are about to do, the facts it relies on with their source (user: the user's words; tool:<name> or db: a tool output of this run) and the evidence for each (the exact text of the user's words, or the exact value of a field that tool is a source of truth for), and what you assume without a source. The runtime checks every fact against its source; the declaration is not passed to the tool.","required":["action","facts"],"additionalProperties":false,"properties":{"action":{"type":"string"},"facts":{"type":"array","maxItems":32,"items":{"type":"object","required":["claim","source","evidence"],"additionalProperties":false,"properties":{"claim":{"type":"string"},"source":{"type":"string","pattern":"^(user|db|tool:.+)$"},"evidence":{"type":"string"}}}},"assumptions":{"type":"array","maxItems":32,"items":{"type":"object","required":["claim"],"additionalProperties":false,"properties":{"id":{"type":"string"},"claim":{"type":"string"},"affects":{"type":"array","items":{"type":"string"}}}}},"side_effects":{"type":"array","maxItems":32,"items":{"type":"string"}}}}`

// ParseDeclaration reads a declaration from a decoded JSON value, strictly:
// an object with action (a non-empty string), facts (claim, source —
// user, db or tool:<name> — and evidence), assumptions (id, claim,
// affects) and side_effects, no other field, within MaxClaims and
// MaxClaimBytes. It returns every problem found (nil declaration then).
func ParseDeclaration(v any) (*Declaration, []Problem) {
	var ps []Problem
	bad := func(ptr, format string, args ...any) {
		ps = append(ps, Problem{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	m, ok := v.(map[string]any)
	if !ok {
		bad("", "a declaration is an object {action, facts: [{claim, source, evidence}], assumptions, side_effects}, got %s", jsonType(v))
		return nil, ps
	}
	str := func(ptr string, x any, required bool) string {
		s, ok := x.(string)
		switch {
		case x == nil && !required:
		case !ok:
			bad(ptr, "must be a string, got %s", jsonType(x))
		case required && strings.TrimSpace(s) == "":
			bad(ptr, "must not be empty")
		case len(s) > MaxClaimBytes:
			bad(ptr, "is %d bytes, more than %d", len(s), MaxClaimBytes)
		}
		return s
	}
	list := func(ptr string, x any) []any {
		l, ok := x.([]any)
		if x != nil && !ok {
			bad(ptr, "must be a list, got %s", jsonType(x))
		}
		if len(l) > MaxClaims {
			bad(ptr, "has %d entries, more than %d", len(l), MaxClaims)
			l = l[:MaxClaims]
		}
		return l
	}
	obj := func(ptr string, x any, known ...string) map[string]any {
		o, ok := x.(map[string]any)
		if !ok {
			bad(ptr, "must be an object, got %s", jsonType(x))
			return nil
		}
		for k := range o {
			if !slices.Contains(known, k) {
				bad(ptr+"/"+escapeToken(k), "unknown field %q (known: %s)", k, strings.Join(known, ", "))
			}
		}
		return o
	}
	d := &Declaration{}
	obj("", m, "action", "facts", "assumptions", "side_effects")
	d.Action = str("/action", m["action"], true)
	for i, x := range list("/facts", m["facts"]) {
		ptr := "/facts/" + strconv.Itoa(i)
		o := obj(ptr, x, "claim", "source", "evidence")
		if o == nil {
			continue
		}
		f := Fact{Claim: str(ptr+"/claim", o["claim"], true), Source: str(ptr+"/source", o["source"], true), Evidence: str(ptr+"/evidence", o["evidence"], false)}
		if f.Source != "" && !validSource(f.Source) {
			bad(ptr+"/source", "source %q is not one the runtime records: write user (the user's words), db (a read of a store) or tool:<name> (that tool's output in this run)", cut(f.Source, 60))
		}
		d.Facts = append(d.Facts, f)
	}
	for i, x := range list("/assumptions", m["assumptions"]) {
		ptr := "/assumptions/" + strconv.Itoa(i)
		o := obj(ptr, x, "id", "claim", "affects")
		if o == nil {
			continue
		}
		a := Assumption{ID: str(ptr+"/id", o["id"], false), Claim: str(ptr+"/claim", o["claim"], true)}
		for j, y := range list(ptr+"/affects", o["affects"]) {
			a.Affects = append(a.Affects, str(ptr+"/affects/"+strconv.Itoa(j), y, true))
		}
		d.Assumptions = append(d.Assumptions, a)
	}
	for i, x := range list("/side_effects", m["side_effects"]) {
		d.SideEffects = append(d.SideEffects, str("/side_effects/"+strconv.Itoa(i), x, true))
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return d, nil
}

func validSource(s string) bool {
	return s == string(OriginUser) || s == string(OriginDB) || strings.HasPrefix(s, "tool:") && len(s) > len("tool:")
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// cut cuts s to n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return value.Preview([]byte(s), n)
}

// CheckDeclaration checks each fact of d against ev, deterministically,
// and returns one verdict per fact, in order. A fact is supported when
// its evidence — or, without evidence, every key value of its claim (the
// quoted parts and the numbers) — is in its source: for source user,
// found in the user's input or messages; for db or tool:<name>, equal to
// a value at a field the tool declares as a source of truth
// (tool.Spec.Verifies) in an output of a read tool (db) or of that tool
// (tool:<name>) in this run. Text of a tool output that merely contains
// the value (a description, a note, a message) supports nothing. A
// verdict's Evidence says where it was found, or why it was not and where
// the text does appear. A nil d has no verdicts.
func CheckDeclaration(d *Declaration, ev *Evidence) []ClaimVerdict {
	if d == nil {
		return nil
	}
	out := make([]ClaimVerdict, len(d.Facts))
	for i, f := range d.Facts {
		out[i] = checkFact(f, ev)
	}
	return out
}

func checkFact(f Fact, ev *Evidence) ClaimVerdict {
	v := ClaimVerdict{Claim: f.Claim}
	keep, what := sourceFilter(f.Source)
	if keep == nil {
		v.Evidence = fmt.Sprintf("source %q is not one the runtime records (user, db, tool:<name>)", cut(f.Source, 60))
		return v
	}
	needles := keyValues(f)
	if len(needles) == 0 {
		v.Evidence = fmt.Sprintf("no evidence to check: quote in evidence the text of %s that states it (at least %d characters)", what, MinMatchLen)
		return v
	}
	if !ev.any(keep) {
		v.Evidence = fmt.Sprintf("%s has nothing recorded in this run", what)
		if f.Source != string(OriginUser) {
			v.Evidence += ": call the tool first, then cite its output"
		}
		return v
	}
	var found []string
	for _, n := range needles {
		where, why := ev.support(f.Source, n, keep, what)
		if why != "" {
			v.Evidence = why
			return v
		}
		found = append(found, where)
	}
	v.Supported = true
	v.Evidence = fmt.Sprintf("%q found in %s", cut(strings.Join(needles, " … "), 200), strings.Join(uniq(found), ", "))
	return v
}

// support looks for the text n in the sources keep selects: for source
// user in their text, for a tool in its source-of-truth fields. It returns
// where it was found, or why it was not (what names the sources).
func (e *Evidence) support(src, n string, keep func(*source) bool, what string) (where, why string) {
	if src == string(OriginUser) {
		if srcs := e.find(n, keep); len(srcs) > 0 {
			return describe(srcs[0]), ""
		}
		why = fmt.Sprintf("%q is not in %s", cut(n, 120), what)
		if elsewhere := e.find(n, nil); len(elsewhere) > 0 {
			why += fmt.Sprintf("; it appears in %s, which the user did not write", describe(elsewhere[0]))
		}
		return "", why
	}
	if s, field := e.truthOf(n, keep); s != nil {
		return describe(s) + " at " + field, ""
	}
	if srcs := e.find(n, keep); len(srcs) > 0 {
		return "", notVerifiedIn(n, srcs[0])
	}
	why = fmt.Sprintf("%q is not in %s", cut(n, 120), what)
	if s, _ := e.truthOf(n, func(s *source) bool { return s.origin.IsTool() }); s != nil {
		why += fmt.Sprintf("; a field tool %s verifies holds it, so cite source tool:%s", s.tool, s.tool)
	} else if elsewhere := e.find(n, func(s *source) bool { return s.origin == OriginUser }); len(elsewhere) > 0 {
		why += fmt.Sprintf("; it appears in %s, so cite source user", describe(elsewhere[0]))
	}
	return "", why
}

// any reports whether some source satisfies keep.
func (e *Evidence) any(keep func(*source) bool) bool {
	if e == nil {
		return false
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, s := range e.srcs {
		if keep(s) {
			return true
		}
	}
	return false
}

func uniq(l []string) []string {
	var out []string
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// sourceFilter is which sources a fact's source names, and how to say it.
func sourceFilter(src string) (func(*source) bool, string) {
	switch {
	case src == string(OriginUser):
		return func(s *source) bool { return s.origin == OriginUser }, "the user's input"
	case src == string(OriginDB):
		return func(s *source) bool { return s.origin == OriginDB }, "the output of a read tool"
	case strings.HasPrefix(src, "tool:") && len(src) > len("tool:"):
		name := src[len("tool:"):]
		return func(s *source) bool { return s.origin.IsTool() && s.tool == name }, "the output of tool " + name
	}
	return nil, ""
}

// truthOf returns the first source satisfying keep with a source-of-truth
// field that holds the value whose text is t, and that field's pointer.
func (e *Evidence) truthOf(t string, keep func(*source) bool) (*source, string) {
	for _, s := range e.sources() {
		if !keep(s) {
			continue
		}
		if ptr, ok := s.holds(t); ok {
			return s, ptr
		}
	}
	return nil, ""
}

// notVerifiedIn says why the text t, found in the tool output s, confirms
// nothing: s's tool verifies no field, or none of its fields holds t.
func notVerifiedIn(t string, s *source) string {
	if len(s.verifies) == 0 {
		return fmt.Sprintf("%q is in %s, but tool %s declares no verifies: fields, so its output confirms nothing", cut(t, 120), describe(s), s.tool)
	}
	return fmt.Sprintf("%q is in %s, but in no field it verifies (verifies: %s): text that merely contains a value confirms nothing", cut(t, 120), describe(s), strings.Join(s.verifies, ", "))
}

func describe(s *source) string {
	if s.origin == OriginUser {
		return "the user's input (" + s.ref + ")"
	}
	return "the output of tool " + s.tool + " (" + s.ref + ")"
}

// keyValues are the texts a fact must be found by: its evidence, or
// without one the quoted parts and the numbers of its claim; each
// normalised, none shorter than MinMatchLen.
func keyValues(f Fact) []string {
	if e := normalise(f.Evidence); e != "" {
		if utf8.RuneCountInString(e) < MinMatchLen {
			return nil
		}
		return []string{e}
	}
	var out []string
	add := func(s string) {
		if s = normalise(s); utf8.RuneCountInString(s) >= MinMatchLen && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	c := f.Claim
	for _, q := range [][2]string{{`"`, `"`}, {"`", "`"}, {"“", "”"}} {
		rest := c
		for {
			i := strings.Index(rest, q[0])
			if i < 0 {
				break
			}
			j := strings.Index(rest[i+len(q[0]):], q[1])
			if j < 0 {
				break
			}
			add(rest[i+len(q[0]) : i+len(q[0])+j])
			rest = rest[i+len(q[0])+j+len(q[1]):]
		}
	}
	for _, w := range strings.FieldsFunc(c, func(r rune) bool { return !isWord(r) && r != '.' && r != '-' && r != '@' }) {
		w = strings.Trim(w, ".-")
		if strings.IndexFunc(w, unicode.IsDigit) >= 0 {
			add(w)
		}
	}
	return out
}
