// Package workflowtool serves flows to agents as tools: one tool per
// workflow, `<name>_workflow`, whose actions (Actions) start a task, submit
// a step's output, have an adapter produce a source step's output, prepare
// a delivery, and report status or cancel (docs/ARCHITECTURE.md "The workflow tool"). AgentTools makes the workflow
// tools agents declare (workflow: FOLDER) as their flows load.
//
// Every call is stateless: it opens nothing but the store it was given,
// loads the flow (a started task's pinned flow), acts, and answers. The
// agent keeps only the task id (the run id). A submit step (`skill:`) and
// a source step (`adapter:`) park the run (waiting) with an approval of
// kind submission; an accepted submission is recorded as a settle
// decision and the run resumes up to its next wait. A rejected one is
// journaled (submission_rejected) and the step stays ready.
//
// Adapters turn a source step's upstream outputs (an object keyed by step
// id) into its output: Go functions registered with RegisterAdapter, or
// exec commands of rein.yaml adapters: (the exec-tool protocol). They run
// through the one invocation pipeline (package invoke), decided by the
// gate the flow's steps get (project.Project.CallGate: Options.Gate or
// rein.yaml policy:, joined with the flow's policy:), each call journaled
// in the task as its call record (journal.Call), with the gate's decision
// on it. An adapter cannot wait
// for a person: a require_approval refuses it.
//
// prepare_delivery writes one file per format of package delivery
// (deliverables.json, .md, .csv and run.mmd); the spreadsheet,
// deliverables.xlsx, is added by importing delivery/xlsx, so a program
// that does not want it does not link excelize.
package workflowtool
