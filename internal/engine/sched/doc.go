// Package sched is rein's scheduler as pure decisions: a deterministic
// state machine that takes a compiled flow, the outcomes of the steps it
// started and the clock, and answers with commands. It does no I/O, reads
// no clock, starts no goroutine and ranges over no map, so the same flow
// fed the same outcomes gets the same commands — in the in-process runner
// (package engine), in a replay of a stored journal, and in a workflow
// engine such as Temporal that must not do I/O in its workflow code.
//
// # Inputs
//
//   - the flow (Reset), and the run's id (it seeds the backoff jitter);
//   - what the driver did and what came of it: Start (attempt n of step i
//     began), Settle (a step's final status, attempts and output digest),
//     Park and Decided (a step waits for a person, and was answered),
//     SettleRun; or the same transitions read from a stored journal
//     (Apply);
//   - the clock, only as an argument: Retry takes now and answers a time;
//   - the values a step's when expression reads (Admit takes them with the
//     step; expressions are pure, so this stays deterministic).
//
// # Commands
//
// Next says what to do with the steps in flight: start a ready step
// (Start), wait for an outcome (Await), or settle the run (Finish, with
// Outcome). Before starting a step the driver asks Admit whether it runs,
// is skipped or fails (skip propagation, when, mandatory), then Answer
// what its latest approval makes of it (run, wait for a person or an
// agent, run again, settle). When an attempt fails, Retry says whether to
// start attempt n+1 and when; when a step's last attempt failed,
// RecoverStep (RecoverItem for one for_each item) says what on_error makes
// of it: fail the step, stop the run, park it for a person, default it, or
// run its fallback. A Budget counts what the run spends (iterations, model
// calls, tokens) and says when a limit is crossed; its wall-time limit is
// Budget.Timeout.
//
// # Inside a step
//
// Items (a for_each step's items, with on_error per item) and Rounds (a
// repeat step's rounds, until repeat.until holds) decide the fan-outs
// inside one step, built on package fan, whose Fan and DAG the plan
// executor and the agent loop use too. Package internal/fanout carries
// them out.
//
// # Where the runner ends
//
// The driver carries the commands out: it renders inputs, calls tools and
// models, evaluates gates and output checks, waits (Retry's time, an
// outcome), and feeds what happened back. A driver that journals commits
// what it recorded before it carries out Start for a step with an effect
// and before it waits (Await): a workflow engine's history does that for
// it. The machine is not safe for concurrent use, except
// Retry (it reads only the flow and the run id) and Budget's methods.
package sched
