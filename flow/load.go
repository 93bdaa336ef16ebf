package flow

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/goccy/go-yaml"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

// The bounds on the files a flow is made of. A file past its bound is
// refused before it is read whole, with a message naming the file.
const (
	// MaxFileBytes bounds a flow file and a rein.yaml.
	MaxFileBytes = 4 << 20
	// MaxSchemaFileBytes bounds a JSON Schema file a flow refers to.
	MaxSchemaFileBytes = 1 << 20
	// MaxSteps bounds the steps of one flow.
	MaxSteps = 10000
)

// Options tell the loader what exists outside the flow file.
type Options struct {
	// Tools resolves tool names the flow does not declare itself: Go tools
	// registered by the application, exec tools of a rein.yaml. Nil means none.
	Tools func(name string) (tool.Spec, bool)
	// Models reports whether a model name is configured. Nil means no model
	// is configured, so every llm step fails validation with a message saying
	// how to configure one.
	Models func(name string) bool
	// ReadFile reads the files a flow refers to (schema files, routes
	// files) by absolute path. Nil means os.ReadFile. A resumed run passes
	// the files it pinned when it started (Flow.Files).
	ReadFile func(path string) ([]byte, error)
	// TrustedToolsOnly refuses a flow that declares tools: of its own. A
	// flow's exec tools run the commands it names, so a flow that declares
	// them is code; with TrustedToolsOnly, tools come only from the
	// application (Tools: rein.yaml and Go tools) and a flow file is data.
	TrustedToolsOnly bool
	// Defaults replace the built-in retries and timeouts of steps that set
	// none (rein.yaml defaults:, Config.Defaults). Nil means the built-in
	// ones (DefaultRetries, DefaultModelTimeout, DefaultToolTimeout).
	Defaults *Defaults
}

// Load reads, validates and compiles the flow file at path. Relative paths
// inside it (schema files, tool commands) resolve against its folder. The
// error is an *Error listing every problem, or an I/O error.
func Load(path string, opts *Options) (*Flow, error) {
	data, err := yamlnode.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load flow: %w", err)
	}
	return Parse(data, path, opts)
}

// readFile reads a file the flow refers to and records it in Flow.Files.
func (d *decoder) readFile(path string) ([]byte, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	read := func(path string) ([]byte, error) { return yamlnode.ReadFile(path, MaxFileBytes) }
	if d.opts.ReadFile != nil {
		read = d.opts.ReadFile
	}
	data, err := read(path)
	if err != nil {
		return nil, err
	}
	if d.flow.Files == nil {
		d.flow.Files = map[string][]byte{}
	}
	d.flow.Files[path] = data
	return data, nil
}

// Parse validates and compiles a flow from YAML text. filename is used in
// messages and as the base for relative paths ("" means the current folder).
func Parse(data []byte, filename string, opts *Options) (*Flow, error) {
	if opts == nil {
		opts = &Options{}
	}
	dir := "."
	if filename != "" {
		dir = filepath.Dir(filename)
	}
	d := &decoder{
		diags:       diagnostics{file: filename},
		flow:        &Flow{File: filename, Dir: dir, Source: data, Schemas: map[string]*Schema{}, Tools: map[string]*ToolDecl{}},
		opts:        opts,
		schemaNodes: map[string]field{},
		schemas:     &schemaSet{dir: dir, byName: map[string]*Schema{}, files: map[string]*Schema{}},
	}
	d.schemas.read = d.readFile
	if len(data) > MaxFileBytes {
		d.diags.add(Pos{1, 1}, "", "flow is %d bytes, more than the %d a flow may have", len(data), MaxFileBytes)
		return nil, d.result()
	}
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "the flow file"})
	if err != nil {
		d.syntaxError(err)
		return nil, d.result()
	}
	if docs := len(file.Docs); docs != 1 || file.Docs[0].Body == nil {
		if docs <= 1 {
			d.diags.add(Pos{1, 1}, "", "the flow file is empty: write a mapping with name: and steps:")
		} else {
			d.diags.add(Pos{1, 1}, "", "a flow file holds exactly one YAML document, found %d", docs)
		}
		return nil, d.result()
	}
	d.decodeFlow(file.Docs[0].Body)
	d.resolveSchemas()
	if d.hasTools {
		if opts.TrustedToolsOnly {
			d.diags.addCode(CodeUntrustedTools, d.toolNodes.keyPos, "", "the flow declares tools: of its own, and only trusted tools are allowed: declare them in rein.yaml, or register them in Go")
		}
		d.flow.Tools = d.decodeTools(d.toolNodes, dir)
	}
	d.applyDefaults()
	d.checkTargets()
	d.checkToolArgs()
	if d.buildGraph() {
		d.checkReferences()
		d.checkDeliverables()
	}
	d.checkFallbacks()
	d.checkSafety()
	if err := d.result(); err != nil {
		return nil, err
	}
	return d.flow, nil
}

func (d *decoder) syntaxError(err error) {
	var le *yamlnode.LimitError
	if errors.As(err, &le) {
		d.diags.add(Pos{le.Line, le.Col}, "", "%s", le.Message)
		return
	}
	var se *yaml.SyntaxError
	if errors.As(err, &se) && se.Token != nil && se.Token.Position != nil {
		d.diags.add(Pos{se.Token.Position.Line, se.Token.Position.Column}, "", "YAML syntax: %s", se.Message)
		return
	}
	d.diags.add(Pos{1, 1}, "", "YAML syntax: %v", err)
}

// result returns the *Error for the collected problems, or nil, and keeps
// the warnings on the flow.
func (d *decoder) result() error {
	errs, warns := d.diags.split()
	d.flow.Warnings = warns
	if len(errs) == 0 {
		return nil
	}
	return &Error{Diagnostics: append(errs, warns...)}
}
