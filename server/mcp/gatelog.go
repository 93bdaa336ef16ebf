package mcp

import (
	"fmt"
	"io"
	"sync"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
)

// GateLog writes a gate's decisions other than allow to W, one line each:
//
//	<Prefix>: policy gate: <verdict> on tool <tool> (call <key>) by rule <rule>: <reason>
//
// for an operator to see as they happen (a served MCP call's, whose record
// the server's ledger run keeps; rein plan run's, which have no run); the
// caller gets the refusal as the call's error too. Hide,
// when set, hides secrets in each line. A *GateLog is safe for concurrent
// use: each line is one Write, never interleaved with another.
type GateLog struct {
	W      io.Writer
	Prefix string
	Hide   func(string) string

	mu sync.Mutex
}

// Decided writes the line of d, the gate's decision on the call of
// inv.Tool whose idempotency key is call, unless d allows it.
func (l *GateLog) Decided(call string, inv *safety.Invocation, d safety.Decision) {
	if d.Verdict == safety.Allow || d.Verdict == "" {
		return
	}
	line := fmt.Sprintf("%s: policy gate: %s on tool %s (call %s) by rule %s: %s", l.Prefix, d.Verdict, inv.Tool.Name, call, d.Rule, d.Reason)
	if l.Hide != nil {
		line = l.Hide(line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.W, line+"\n")
}

// GateDecided is Decided at the call's position: with Called, it makes a
// *GateLog a recorder of rein's invocation pipeline, for rein's own
// callers of it (the MCP server, rein plan run).
func (l *GateLog) GateDecided(at invoke.Position, inv *safety.Invocation, d safety.Decision) {
	l.Decided(at.Key(), inv, d)
}

// Note writes line, with the prefix, as one line of its own (a served
// call's record that could not be journaled).
func (l *GateLog) Note(line string) {
	line = l.Prefix + ": " + line
	if l.Hide != nil {
		line = l.Hide(line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.W, line+"\n")
}

// Called keeps nothing: a GateLog logs decisions only.
func (*GateLog) Called(invoke.Record) {}

var _ invoke.Recorder = (*GateLog)(nil)
