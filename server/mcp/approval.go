package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
)

// approvalInput is the id of the one input request a held call's result
// carries: the host's user's answer.
const approvalInput = "approval"

// pending is what a held call's request state carries to the call the
// client makes again with its user's answer (MCP multi round-trip: the
// SDK asks the user with elicitation, then calls again with the answer):
// which call (its key's attempt, its tool, its args' digest) and why it
// was held. It is signed with the Server's secret, which never leaves the
// process, and answered once.
type pending struct {
	Tool    string `json:"tool"`
	Attempt int    `json:"attempt"`
	Args    string `json:"args_sha256"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// newSecret returns the key a Server signs request states with.
func newSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// ask answers a held call r (held: why) with an input request: the host's
// user is asked, with MCP elicitation, to approve the exact call; the
// client then calls again with the answer (answered).
func (s *Server) ask(r *invoke.Request, held error) *sdk.CallToolResult {
	p := pending{Tool: r.Spec.Name, Attempt: r.At.Attempt, Args: (&invoke.Record{Args: r.Args}).ArgsDigest()}
	if g := r.Recorder.(*callRecorder).held(); g != nil {
		p.Verdict, p.Why = g.Verdict, g.Why
	}
	body, _ := json.Marshal(p)
	state := base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(s.sign(body))
	return &sdk.CallToolResult{RequestState: state, InputRequests: sdk.InputRequestMap{approvalInput: &sdk.ElicitParams{
		Message:         s.redact(approvalMessage(r, held)),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}}
}

func (s *Server) sign(body []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write(body)
	return m.Sum(nil)
}

// answered reads the host's user's answer to a held call and makes r that
// call again: its position (the same key), its args' check, and, accepted,
// Approved with the decisions on record. The answer to a call is taken
// once. Its error is the refusal (journaled when the call is known).
func (s *Server) answered(params *sdk.CallToolParamsRaw, rec *callRecorder, r *invoke.Request) error {
	name := r.Spec.Name
	p, err := s.verify(params.RequestState)
	if err == nil && (p.Tool != name || p.Args != (&invoke.Record{Args: r.Args}).ArgsDigest()) {
		err = errors.New("it was given for another call (another tool or other arguments)")
	}
	if err != nil {
		return fault.Errorf(fault.Policy, "tool %s was not called: the answer to its approval cannot be used, %v; call the tool again, without requestState, to be asked anew", name, err)
	}
	r.At = invoke.Position{RunID: s.ledger.id, StepID: name, Attempt: p.Attempt}
	if _, taken := s.answers.LoadOrStore(r.At.Key(), true); taken {
		return fault.Errorf(fault.Policy, "tool %s was not called again: call %s was answered already (each approval lets one call through); call the tool again, without requestState, to be asked anew", name, r.At.Key())
	}
	if p.Verdict != "" {
		rec.decided(journal.CallGate{Verdict: p.Verdict, Why: p.Why})
	}
	res, _ := params.InputResponses[approvalInput].(*sdk.ElicitResult)
	action := "nothing"
	if res != nil {
		action = res.Action
	}
	if action == "accept" {
		rec.decided(journal.CallGate{Verdict: string(safety.Allow), Why: "approved by the MCP host's user (elicitation)"})
		r.Approved = true
		return nil
	}
	refusal := fault.Errorf(fault.Policy, "tool %s needs a person's approval: %s; the host's user answered %s when asked to approve it, so the call was refused and nothing was done", name, p.Why, action)
	rec.refused(r, refusal, &journal.CallGate{Verdict: string(safety.Block), Why: "the MCP host's user answered " + action + " (elicitation)"})
	return refusal
}

// verify returns the pending call a request state signed by s carries.
func (s *Server) verify(state string) (*pending, error) {
	b64, sig64, ok := strings.Cut(state, ".")
	body, err1 := base64.RawURLEncoding.DecodeString(b64)
	sig, err2 := base64.RawURLEncoding.DecodeString(sig64)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(sig, s.sign(body)) {
		return nil, errors.New("its requestState is missing, altered or from another server process")
	}
	var p pending
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("its requestState does not decode: %w", err)
	}
	return &p, nil
}
