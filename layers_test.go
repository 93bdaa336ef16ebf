package rein_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of docs/ARCHITECTURE.md ("Layers and their import
// rules"), checked with go list as TestDocLinksResolve checks the links, so
// the layering cannot drift. Paths are relative to the module.
const module = "github.com/reinhq/rein"

// drivers are the packages that bring a driver or a provider's SDK in;
// only a program (cmd/rein, a test, a user's main) imports them, to
// register them.
var drivers = []string{"store/sqlite", "store/postgres", "model/openai", "model/anthropic"}

// ports are the vocabulary every layer speaks; they import no layer above
// them and no adapter.
var ports = []string{"fault", "value", "redact", "flow", "journal", "store", "model", "tool", "trace", "safety"}

// above are the layers over the ports: no port imports them. (The
// decision runtimes internal/route and internal/plan sit with the ports:
// flow compiles a step's routes with internal/route.)
var above = []string{"", "project", "runs", "session", "decide", "server", "cmd", "internal/engine", "internal/wire", "internal/agent", "internal/invoke"}

// adapters implement a port; the engine and the ports never import one.
var adapters = append([]string{"model/provider", "model/scripted", "model/cassette", "tool/exec", "tool/mcp", "trace/jsonl", "trace/slogsink", "trace/otel"}, drivers...)

type listed struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
	Deps       []string
}

func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: the import rules are checked where the toolchain is")
	}
	out, err := exec.Command("go", append([]string{"list", "-json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// rel is p relative to the module ("" for the root), or p itself outside it.
func rel(p string) string {
	if p == module {
		return ""
	}
	return strings.TrimPrefix(p, module+"/")
}

// under reports whether the module package r is one of roots or below one.
func under(r string, roots []string) bool {
	for _, root := range roots {
		if r == root || root != "" && strings.HasPrefix(r, root+"/") {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	for _, p := range goList(t, "./...") {
		from := rel(p.ImportPath)
		port := under(from, ports) && !under(from, adapters)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := rel(imp)
			switch {
			case port && (to == "" || under(to, above[1:])):
				t.Errorf("%s imports %s: a port imports no layer above it", p.ImportPath, imp)
			case port && under(to, adapters):
				t.Errorf("%s imports the adapter %s: ports depend on ports only", p.ImportPath, imp)
			case under(from, []string{"internal/engine", "internal/agent", "internal/plan", "internal/route", "internal/invoke"}) && under(to, adapters):
				t.Errorf("%s imports the adapter %s: the engine and the decision runtimes depend on ports only", p.ImportPath, imp)
			case from == "cmd/rein" && strings.HasPrefix(to, "internal/"):
				t.Errorf("cmd/rein imports %s: the CLI calls the Client, runs, session and server packages, never an implementation package", imp)
			case (from == "" || from == "project" || from == "runs" || from == "session" || strings.HasPrefix(from, "server/")) && under(to, drivers):
				t.Errorf("%s imports the driver %s: a program registers drivers by importing them, a library never does", p.ImportPath, imp)
			}
		}
	}
}

// TestCLIRegistersDriversInOneFile: cmd/rein imports the drivers in
// drivers.go only, as registrations.
func TestCLIRegistersDriversInOneFile(t *testing.T) {
	t.Parallel()
	pkgs := goList(t, "./cmd/rein")
	fset := token.NewFileSet()
	for _, name := range pkgs[0].GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkgs[0].Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if !under(rel(path), drivers) || !strings.HasPrefix(path, module) {
				continue
			}
			if (name != "drivers.go" || !isBlank(imp)) && !driverCommands[name] {
				t.Errorf("cmd/rein/%s imports %s: drivers are registered in drivers.go with a blank import", name, path)
			}
		}
	}
}

// driverCommands are the commands about one driver: rein runs check is
// SQLite's integrity check.
var driverCommands = map[string]bool{"check.go": true}

func isBlank(imp *ast.ImportSpec) bool { return imp.Name != nil && imp.Name.Name == "_" }

// TestRootIsSmall: the root package is the small facade a program
// imports: at most 40 exported names in at most 6 files. (That it reaches
// no driver or SDK is TestRootLinksNoDriver's.)
func TestRootIsSmall(t *testing.T) {
	t.Parallel()
	root := goList(t, "-deps=false", ".")[0]
	if len(root.GoFiles) > 6 {
		t.Errorf("the root package has %d files (%s), more than 6", len(root.GoFiles), strings.Join(root.GoFiles, ", "))
	}
	fset := token.NewFileSet()
	var names []string
	for _, name := range root.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(root.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(names) > 40 {
		slices.Sort(names)
		t.Errorf("the root package exports %d names, more than 40: %s", len(names), strings.Join(names, ", "))
	}
}
