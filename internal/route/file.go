package route

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/reinhq/rein/internal/yamlnode"
)

// MaxFileSize is the largest routes file Parse accepts, in bytes.
const MaxFileSize = 1 << 20

// File is a parsed routes file (see the package documentation for the
// format).
type File struct {
	// Name is the file name used in messages.
	Name   string
	Routes []Route
	// Rules holds every rule of the file in file order, each with the
	// route it selects; that is the order they are tried in.
	Rules []Rule
	// Model names the model the semantic router uses; empty when the file
	// does not say.
	Model string
	// Fallback names the fallback route; when set, no semantic router is
	// used.
	Fallback string

	locs fileLocs
}

// loc is where a node starts, and what is needed to place an offset
// inside a single-line scalar.
type loc struct {
	line, col int
	quote     int  // 1 for quoted scalars
	block     bool // block scalar: offsets cannot be placed
}

type routeLocs struct {
	node              loc
	name, description *loc
	path              string
}

type ruleLocs struct {
	node   loc
	fields map[string]loc // prefix, regexp, expr, route: their values
	path   string
}

type fileLocs struct {
	routes   []routeLocs
	rules    []ruleLocs // parallel to File.Rules
	top      loc
	routesAt *loc
	fallback *loc
}

// ParseFile reads and parses the routes file at path; see Parse.
func ParseFile(path string) (*File, error) {
	data, err := yamlnode.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("read routes file: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a routes file named name and validates it as New would
// (with no semantic router). Problems are reported together in an *Error
// whose Problems carry name, a line and a column: first those of the
// file's shape (YAML syntax, unknown or duplicate fields, wrong types,
// empty values, model combined with fallback); once the shape is right,
// those New finds (a missing name or description, duplicate route names,
// rules with no or several conditions or naming an unknown route, regexps
// and expressions that do not compile, an unknown fallback). Anchors,
// aliases, tags and merge keys are rejected: a routes file is plain data.
func Parse(name string, data []byte) (f *File, err error) {
	fp := &fileParser{name: name}
	defer func() {
		// The YAML library is fuzzed upstream; this keeps a crash in it
		// from taking the process down with a user's file.
		if r := recover(); r != nil {
			f, err = nil, &Error{Problems: []Problem{{File: name, Line: 1, Col: 1, Message: fmt.Sprintf("YAML parser failed: %v", r)}}}
		}
	}()
	f = fp.parse(data)
	if len(fp.ps.list) == 0 {
		_, nerr := New(f.Config(nil))
		fp.located(f, nerr)
	}
	if len(fp.ps.list) > 0 {
		slices.SortStableFunc(fp.ps.list, func(a, b Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, &Error{Problems: fp.ps.list}
	}
	return f, nil
}

// Config returns the configuration the file describes, with sem as its
// semantic router (nil for none).
func (f *File) Config(sem Semantic) Config {
	return Config{Routes: slices.Clone(f.Routes), Rules: slices.Clone(f.Rules), Semantic: sem, Fallback: f.Fallback}
}

// Router returns the file's Router with sem as its semantic router (nil
// for none). A file naming a fallback route cannot take one; that and any
// other problem is an *Error located in the file.
func (f *File) Router(sem Semantic) (*Router, error) {
	r, err := New(f.Config(sem))
	if err != nil {
		fp := &fileParser{name: f.Name}
		fp.located(f, err)
		return nil, &Error{Problems: fp.ps.list}
	}
	return r, nil
}

type fileParser struct {
	name string
	ps   problems
}

func (fp *fileParser) at(l loc, path, format string, args ...any) {
	fp.ps.list = append(fp.ps.list, Problem{File: fp.name, Line: l.line, Col: l.col, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (fp *fileParser) atNode(n ast.Node, path, format string, args ...any) {
	fp.at(locOf(n), path, format, args...)
}

// located turns the problems of New into problems located in the file.
func (fp *fileParser) located(f *File, err error) {
	var e *Error
	if err == nil {
		return
	}
	if !errors.As(err, &e) {
		fp.at(f.locs.top, "", "%v", err)
		return
	}
	for _, p := range e.Problems {
		l, path := f.locs.top, p.Path
		switch p.part {
		case "route":
			rl := f.locs.routes[p.index]
			l, path = rl.node, rl.path+"."+p.field
			if p.field == "name" && rl.name != nil {
				l = *rl.name
			} else if p.field == "description" && rl.description != nil {
				l = *rl.description
			}
		case "rule":
			rl := f.locs.rules[p.index]
			l, path = rl.node, rl.path
			if v, ok := rl.fields[p.field]; ok {
				l, path = v, rl.path+"."+p.field
				if p.offset >= 0 && !l.block {
					l.col += l.quote + utf8.RuneCountInString(fieldOf(f.Rules[p.index], p.field)[:min(p.offset, len(fieldOf(f.Rules[p.index], p.field)))])
				}
			}
		case "fallback":
			if f.locs.fallback != nil {
				l = *f.locs.fallback
			}
		default:
			if f.locs.routesAt != nil {
				l = *f.locs.routesAt
			}
		}
		fp.at(l, path, "%s", p.Message)
	}
}

func fieldOf(r Rule, field string) string {
	switch field {
	case "prefix":
		return r.Prefix
	case "regexp":
		return r.Regexp
	case "expr":
		return r.Expr
	}
	return r.Route
}

var (
	topFields       = []string{"routes", "rules", "model", "fallback"}
	routeFields     = []string{"name", "description", "rules"}
	routeRuleFields = []string{"prefix", "regexp", "expr"}
	topRuleFields   = []string{"prefix", "regexp", "expr", "route"}
)

// pendingRule is a rule with where it was written, before sorting.
type pendingRule struct {
	rule Rule
	locs ruleLocs
}

func (fp *fileParser) parse(data []byte) *File {
	f := &File{Name: fp.name, locs: fileLocs{top: loc{line: 1, col: 1}}}
	if len(data) > MaxFileSize {
		fp.at(f.locs.top, "", "routes file is %d bytes long; the limit is %d", len(data), MaxFileSize)
		return f
	}
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "the routes file"})
	if err != nil {
		fp.yamlError(err)
		return f
	}
	var docs []*ast.DocumentNode
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		fp.at(f.locs.top, "", "routes file is empty: expected a top-level routes: list")
		return f
	}
	for _, d := range docs[1:] {
		fp.atNode(d.Body, "", "a routes file is one YAML document; remove this second document")
	}
	body := docs[0].Body
	ast.Walk(plainData{fp}, body)
	if len(fp.ps.list) > 0 {
		return f
	}
	fields := fp.mapping(body, "", "the routes file", topFields)
	if fields == nil {
		return f
	}
	var rules []pendingRule
	if mv, ok := fields["routes"]; ok {
		l := locOf(mv.Value)
		f.locs.routesAt = &l
		rules = fp.routes(f, mv.Value)
	} else {
		fp.atNode(body, "routes", "missing routes: list (each route has a name and a description)")
	}
	if mv, ok := fields["rules"]; ok {
		rules = append(rules, fp.rules(mv.Value, "rules", "", topRuleFields)...)
	}
	if mv, ok := fields["model"]; ok {
		if s, ok := fp.str(mv.Value, "model"); ok {
			if s == "" {
				fp.atNode(mv.Value, "model", "model must not be empty; remove it to use the default model")
			}
			f.Model = s
		}
	}
	if mv, ok := fields["fallback"]; ok {
		l := locOf(mv.Value)
		f.locs.fallback = &l
		if s, ok := fp.str(mv.Value, "fallback"); ok {
			if s == "" {
				fp.atNode(mv.Value, "fallback", "fallback must not be empty; remove it to have no fallback route")
			}
			f.Fallback = s
		}
		if _, both := fields["model"]; both {
			fp.atNode(mv.Key, "fallback", "give either model: (a semantic router chooses when no rule matches) or fallback: (no model is called; the fallback route is taken), not both")
		}
	}
	slices.SortStableFunc(rules, func(a, b pendingRule) int {
		if a.locs.node.line != b.locs.node.line {
			return a.locs.node.line - b.locs.node.line
		}
		return a.locs.node.col - b.locs.node.col
	})
	for _, r := range rules {
		f.Rules = append(f.Rules, r.rule)
		f.locs.rules = append(f.locs.rules, r.locs)
	}
	return f
}

func (fp *fileParser) routes(f *File, n ast.Node) []pendingRule {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		fp.atNode(n, "routes", "routes must be a list of routes, got %s", yamlnode.Kind(n))
		return nil
	}
	var rules []pendingRule
	for i, item := range seq.Values {
		path := fmt.Sprintf("routes[%d]", i)
		fields := fp.mapping(item, path, path, routeFields)
		if fields == nil {
			continue
		}
		before := len(fp.ps.list)
		var rt Route
		rl := routeLocs{node: locOf(item), path: path}
		if mv, ok := fields["name"]; ok {
			l := locOf(mv.Value)
			rl.name = &l
			rt.Name, _ = fp.str(mv.Value, path+".name")
		}
		if mv, ok := fields["description"]; ok {
			l := locOf(mv.Value)
			rl.description = &l
			rt.Description, _ = fp.str(mv.Value, path+".description")
		}
		nameOK := len(fp.ps.list) == before || rl.name == nil
		if mv, ok := fields["rules"]; ok && nameOK {
			rules = append(rules, fp.rules(mv.Value, path+".rules", rt.Name, routeRuleFields)...)
		}
		f.Routes = append(f.Routes, rt)
		f.locs.routes = append(f.locs.routes, rl)
	}
	return rules
}

// rules parses a rules list. Under a route (route != "") a rule selects
// that route; at the top level each rule names its route.
func (fp *fileParser) rules(n ast.Node, path, route string, known []string) []pendingRule {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		fp.atNode(n, path, "rules must be a list of rules such as {prefix: \"weather:\"}, got %s", yamlnode.Kind(n))
		return nil
	}
	var out []pendingRule
	for i, item := range seq.Values {
		rpath := fmt.Sprintf("%s[%d]", path, i)
		before := len(fp.ps.list)
		fields := fp.mapping(item, rpath, rpath, known)
		if fields == nil {
			continue
		}
		if route != "" {
			fields["route"] = nil // implied by the enclosing route
		}
		pr := pendingRule{rule: Rule{Route: route}, locs: ruleLocs{node: locOf(item), fields: map[string]loc{}, path: rpath}}
		for _, k := range topRuleFields {
			mv := fields[k]
			if mv == nil {
				continue
			}
			pr.locs.fields[k] = locOf(mv.Value)
			s, ok := fp.str(mv.Value, rpath+"."+k)
			if ok && s == "" {
				fp.atNode(mv.Value, rpath+"."+k, "%s must not be empty", k)
			}
			switch k {
			case "prefix":
				pr.rule.Prefix = s
			case "regexp":
				pr.rule.Regexp = s
			case "expr":
				pr.rule.Expr = s
			case "route":
				pr.rule.Route = s
			}
		}
		if len(fp.ps.list) == before {
			out = append(out, pr)
		}
	}
	return out
}

// mapping returns the fields of a mapping node, reporting non-mappings,
// duplicate keys and keys not in known; nil for a non-mapping.
func (fp *fileParser) mapping(n ast.Node, path, what string, known []string) map[string]*ast.MappingValueNode {
	values, ok := yamlnode.Entries(n)
	if !ok {
		fp.atNode(n, path, "%s must be a mapping, got %s", what, yamlnode.Kind(n))
		return nil
	}
	fields := make(map[string]*ast.MappingValueNode, len(values))
	for _, mv := range values {
		key, ok := yamlnode.String(mv.Key)
		if !ok {
			fp.atNode(mv.Key, path, "%s has a key that is not a string", what)
			continue
		}
		if first, dup := fields[key]; dup {
			fp.atNode(mv.Key, join(path, key), "duplicate field %q in %s (first at line %d)", key, what, locOf(first.Key).line)
			continue
		}
		if !slices.Contains(known, key) {
			hint := ""
			if key == "route" && strings.Contains(what, ".rules[") {
				hint = "; a rule listed under a route selects that route (to name a route, move the rule to the top-level rules: list)"
			}
			fp.atNode(mv.Key, join(path, key), "unknown field %q in %s (known: %s)%s", key, what, strings.Join(known, ", "), hint)
			continue
		}
		fields[key] = mv
	}
	return fields
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// str returns a string scalar, reporting anything else.
func (fp *fileParser) str(n ast.Node, path string) (string, bool) {
	s, ok := yamlnode.String(n)
	if !ok {
		field := path[strings.LastIndexByte(path, '.')+1:]
		fp.atNode(n, path, "%s must be a string, got %s (quote it)", field, yamlnode.Kind(n))
	}
	return s, ok
}

// plainData reports anchors, aliases and tags.
type plainData struct{ fp *fileParser }

func (v plainData) Visit(n ast.Node) ast.Visitor {
	switch n.(type) {
	case *ast.AnchorNode:
		v.fp.atNode(n, "", "anchors (&name) are not supported in a routes file; write the value out")
		return nil
	case *ast.AliasNode:
		v.fp.atNode(n, "", "aliases (*name) are not supported in a routes file; write the value out")
		return nil
	case *ast.TagNode:
		v.fp.atNode(n, "", "tags (!tag) are not supported in a routes file; quote the value instead")
		return nil
	case *ast.MergeKeyNode:
		v.fp.atNode(n, "", "merge keys (<<) are not supported in a routes file")
		return nil
	}
	return v
}

// locOf returns where n starts: a block mapping's first key, else its token.
func locOf(n ast.Node) loc {
	n = yamlnode.StartNode(n)
	if n == nil {
		return loc{line: 1, col: 1}
	}
	tk := n.GetToken()
	var l loc
	l.line, l.col = yamlnode.TokenPos(tk)
	if tk != nil {
		switch tk.Type {
		case token.DoubleQuoteType, token.SingleQuoteType:
			l.quote = 1
		}
	}
	if _, ok := n.(*ast.LiteralNode); ok {
		l.block = true
	}
	return l
}

// yamlError records a go-yaml error with its position.
func (fp *fileParser) yamlError(err error) {
	var le *yamlnode.LimitError
	if errors.As(err, &le) {
		fp.at(loc{line: le.Line, col: le.Col}, "", "%s", le.Message)
		return
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		var l loc
		l.line, l.col = yamlnode.TokenPos(ye.GetToken())
		fp.at(l, "", "%s", ye.GetMessage())
		return
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	fp.at(loc{line: 1, col: 1}, "", "%s", msg)
}
