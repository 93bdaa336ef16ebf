package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/temporal"
)

// loadKeys reads the keys of --project DIR's rein.yaml encryption: into
// c.keys. Without --project the keys are those of the folders the command
// loaded (rein worker DIR…, rein run DIR, rein agent DIR), set before
// dial; rein runs … and codec-server load none of their own, so they need
// --project DIR to read sealed runs.
func (c *common) loadKeys() error {
	if c.project == "" {
		return nil
	}
	var p *project.Project
	var err error
	if project.IsAgentDir(c.project) {
		p, err = project.LoadAgent(c.project, declared())
	} else {
		p, err = project.Load(c.project, declared())
	}
	if err != nil {
		return fmt.Errorf("--project %s: %w", c.project, err)
	}
	defer p.Close()
	if p.Codec() == nil {
		return usageErr(fmt.Sprintf("--project %s: its rein.yaml names no encryption: key (give the folder whose rein.yaml does)", c.project))
	}
	if c.keys != nil && c.keys.KeyID() != p.Codec().KeyID() {
		return usageErr(fmt.Sprintf("--project %s seals with key %s, the folders given with key %s: give one key", c.project, p.Codec().KeyID(), c.keys.KeyID()))
	}
	c.keys = p.Codec()
	return nil
}

// blobCodec is the blob store of --blobs, or nil.
func (c *common) blobCodec() *temporal.BlobCodec {
	if c.blobs == "" {
		return nil
	}
	return &temporal.BlobCodec{Dir: c.blobs, Threshold: c.blobMin}
}

// warnClear says once, at a worker's start, that the flows declaring
// secrets run without a key: what their steps return is redacted in the
// history, so a later step reads [REDACTED] where a local run reads the
// value.
func warnClear(w io.Writer, flows *temporal.Flows, keys *seal.Codec) {
	if keys != nil {
		return
	}
	if names := flows.Secretive(); len(names) > 0 {
		fmt.Fprintf(w, "rein worker: flow(s) %s declare secrets and no rein.yaml encryption: key is configured: their secrets are redacted from the history, so a step reads [REDACTED] where a local run reads the value (name a key to seal the history instead; docs/temporal.md \"Secrets\")\n", strings.Join(names, ", "))
	}
}

// declared are the load options of a command that loads a folder to start
// its runs or read its key, not to call its tools: the workflow tools its
// agents declare are made from their folders' specs (a worker, which
// calls them, serves them over its run store).
func declared() *project.LoadOptions {
	return &project.LoadOptions{Workflow: workflowtool.Declared(false)}
}
