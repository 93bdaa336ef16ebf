package store

import "github.com/reinhq/rein/journal"

// Call is journal.Call: the one record of an invocation (see Store.Calls).
type Call = journal.Call

// CallKind is journal.CallKind.
type CallKind = journal.CallKind

// CallStatus is journal.CallStatus.
type CallStatus = journal.CallStatus

// Call kinds and statuses (journal's).
const (
	CallTool      = journal.CallTool
	CallModel     = journal.CallModel
	CallStarted   = journal.CallStarted
	CallSucceeded = journal.CallSucceeded
	CallFailed    = journal.CallFailed
	CallLate      = journal.CallLate
	CallWaiting   = journal.CallWaiting
)
