// Package exec runs external programs as rein tools: the command a flow file
// declares under tools: becomes a tool.Tool.
//
// The protocol is small. The step's args arrive on stdin as one JSON value
// and a newline, then stdin is closed. The environment is explicit: the
// parent's variables that BaseEnv (PATH, HOME, locale, TZ, TMPDIR, …) or
// Config.PassEnv name, PWD set to the working directory, Config.Env, and
// REIN_RUN_ID, REIN_STEP_ID, REIN_ATTEMPT and REIN_IDEMPOTENCY_KEY from
// tool.CallInfoFrom. Nothing else of the parent's environment (API keys,
// database passwords) reaches the program. The program prints exactly one JSON value on stdout
// (surrounding whitespace is fine) and exits 0. Exit code 75 (EX_TEMPFAIL)
// is a transient failure the engine may retry; any other non-zero exit is a
// business failure whose message carries the tail of stderr, with the
// secrets the program was given hidden (package redact).
//
// Each call runs in its own process group. On a timeout, a cancellation or
// output past the size cap, the whole group is killed with SIGKILL, so
// children a script spawned die with it; stragglers left behind by a
// program that exited are killed too, so no process outlives its call.
// On Linux the program also gets a parent-death signal (SIGKILL): when rein
// dies, even by kill -9, the program it started dies with it. Processes the
// program spawned stay in its group; a caller that put a tool.ProcessHook
// in the call's context is told the group (id, leader start time, boot) as
// soon as it started, so that it can record it and a later process can
// stop what is left (the engine does: every rein that opens the store, and
// a resume before it runs or parks a step). Every process of a call
// inherits MarkVar (REIN_CALL_TOKEN), unique to the call, also reported
// to the hook (tool.Process.Mark): on Linux rein makes itself the child
// subreaper of what it starts, and when the call ends it kills and reaps
// every process that still holds the mark, those that left the group
// (setsid, setpgid) included. A process that clears its environment, or
// any process outside Linux, that leaves the group escapes every kill and
// outlives the call: a program should keep what it spawns in its group
// and wait for it.
// Process groups need a Unix system (Linux is what rein tests on); elsewhere
// only the direct child is killed, and outside Linux there is no
// parent-death signal.
package exec
