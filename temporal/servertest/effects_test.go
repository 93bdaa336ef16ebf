//go:build temporalserver

package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/temporal"
)

// TestRunsHistoryViews: rein runs effects and rein runs show --temporal
// (the rein-temporal program, built here) read a run's calls and an
// agent's transcript from its workflow history on a real server: a flow of
// three tool steps lists its three calls with their keys, tools, effect
// and status; an agent run waiting on its pay call's approval lists the
// two calls made, then, approved, the pay call too, and rein runs show
// prints its transcript, the person's decision and the answer; rein runs
// trace summarises it. REIN_UPDATE_HISTORIES=1 records both runs'
// histories (run-fx-tools.json, run-fx-agent.json: every attempt reports
// its calls' effects), which TestHistoryRecorded reads back.
func TestRunsHistoryViews(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	ns := ts.GetDefaultNamespace()
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), worker.Options{})
	prog := program(t)
	run := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		var out, errs bytes.Buffer
		cmd := exec.Command(prog, append(args, "--temporal", ts.GetFrontendHostPort(), "--namespace", ns)...)
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		if errs.Len() > 0 {
			t.Logf("%v: stderr %s", args, errs.String())
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	effects := func(t *testing.T, id string) *temporal.EffectsView {
		t.Helper()
		code, out := run(t, "runs", "effects", id, "-o", "json")
		var v temporal.EffectsView
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("rein runs effects %s -o json: exit %d\n%s", id, code, out)
		}
		return &v
	}

	t.Run("tool steps", func(t *testing.T) {
		if _, err := temporal.StartRun(ctx, c, load(t, "takeover", l), map[string]any{}, temporal.StartOptions{RunID: "run-fx-tools", TaskQueue: queue}); err != nil {
			t.Fatal(err)
		}
		if st := follow(t, c, "run-fx-tools"); st.Status != "succeeded" {
			t.Fatalf("run: %+v", st)
		}
		v := effects(t, "run-fx-tools")
		got := map[string]temporal.EffectCall{}
		for _, call := range v.Calls {
			got[call.Key] = call
		}
		if v.Flow != "takeover" || v.Status != "succeeded" || len(v.Calls) != 3 {
			t.Fatalf("view %+v", v)
		}
		for step, tool := range map[string]string{"safe": "slow_safe", "charge": "slow_charge", "done": "ok"} {
			call := got["run-fx-tools/"+step+"/1"]
			if call.StepID != step || call.Tool != tool || call.Effect.Effect != "write" || call.Status != temporal.CallSucceeded || call.Attempt != 1 || call.Activity != "tool:"+step {
				t.Errorf("call of %s: %+v", step, call)
			}
		}
		code, out := run(t, "runs", "effects", "run-fx-tools")
		if code != 0 || !strings.Contains(out, "run run-fx-tools (takeover, succeeded): 3 calls with an effect\n") || !strings.Contains(out, "run-fx-tools/charge/1 slow_charge write succeeded\n") {
			t.Errorf("rein runs effects: exit %d\n%s", code, out)
		}
		saveHistory(t, c, "run-fx-tools")
	})

	t.Run("agent", func(t *testing.T) {
		const id = "run-fx-agent"
		if _, err := temporal.StartRun(ctx, c, load(t, "agent", l), map[string]any{"task": "pay 5"}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
			t.Fatal(err)
		}
		if st := follow(t, c, id); st.Status != "waiting" {
			t.Fatalf("run: %+v", st)
		}
		v := effects(t, id)
		if v.Status != "waiting" || len(v.Calls) != 2 || v.Calls[0].Key != id+"/agent/1/turn1/call1" || v.Calls[0].Tool != "ok" || v.Calls[0].StepID != "agent" ||
			v.Calls[0].Turn != 1 || v.Calls[0].Call != 1 || v.Calls[1].Call != 2 || v.Calls[1].Status != temporal.CallSucceeded {
			t.Fatalf("waiting: %+v", v)
		}
		code, out := run(t, "runs", "show", id)
		for _, want := range []string{"transcript of agent:\n", "  turn 1 (tokens", "    call 1 ok {\"n\":1} -> ok", "    call 1 pay {\"amount\":5} -> waiting", "waits on:\n  step agent/turn2/call1"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("rein runs show of the waiting run: exit %d, no %q in\n%s", code, want, out)
			}
		}
		if err := temporal.Decide(ctx, c, id, temporal.Decision{Step: "agent/turn2/call1", Action: temporal.ActionApprove, By: "ana", Comment: "ok to pay"}); err != nil {
			t.Fatal(err)
		}
		if st := follow(t, c, id); st.Status != "succeeded" {
			t.Fatalf("run: %+v", st)
		}
		v = effects(t, id)
		if len(v.Calls) != 3 {
			t.Fatalf("succeeded: %+v", v)
		}
		if pay := v.Calls[2]; pay.Key != id+"/agent/1/turn2/call1" || pay.Tool != "pay" || pay.Effect.Effect != "write" || pay.Status != temporal.CallSucceeded || pay.Activity != "call:pay" {
			t.Errorf("pay %+v", pay)
		}
		if n := len(l.lines("pay")); n != 1 {
			t.Errorf("pay ran %d times", n)
		}
		code, out = run(t, "runs", "show", id)
		for _, want := range []string{"status     succeeded", "transcript of agent:\n", "    call 1 pay {\"amount\":5} -> ok", "      decided: approve (ok to pay)\n", "  turn 3 (tokens", ": answer paid 5\n"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("rein runs show: exit %d, no %q in\n%s", code, want, out)
			}
		}
		code, out = run(t, "runs", "trace", id)
		for _, want := range []string{"run " + id, "flow agent", "status succeeded", "slowest steps", "most tokens"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("rein runs trace: exit %d, no %q in\n%s", code, want, out)
			}
		}
		code, out = run(t, "runs", "show", id, "-o", "json")
		var shown struct {
			Status   string                       `json:"status"`
			Agents   map[string][]json.RawMessage `json:"agents"`
			Sessions []temporal.AgentSession      `json:"sessions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Status != "succeeded" || len(shown.Agents["agent"]) != 3 ||
			len(shown.Sessions) != 1 || shown.Sessions[0].Decisions["turn2/call1"].Comment != "ok to pay" {
			t.Errorf("rein runs show -o json: exit %d\n%s", code, out)
		}
		saveHistory(t, c, id)
	})
}
