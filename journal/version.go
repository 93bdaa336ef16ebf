package journal

import "fmt"

// Version is the version of the records this binary writes, and the
// newest it reads. Every stored record carries the version it was written
// with; a record of a higher version is refused (VersionError), never
// guessed at. Raise it for a change an older binary would misread; a new
// field that reads as zero when absent needs no new version.
//
// Version 2: an invocation's story is one call event (Kind CallRecorded,
// Event.Call) instead of store rows and gate_decision, call_effect and
// agent_call events. A binary of version 1 would read a run of version 2
// as one without call records (it would make again the calls a resumed
// for_each or plan step already made), so it refuses it.
//
// Version 3: an agent's call is its call record, the loop's part in
// Call.Agent, instead of an agent_call event. A binary of version 2 would
// fold an agent step's transcript without its calls' outcomes (its calls
// still chosen: in doubt, or made again on resume), so it refuses it.
//
// Version 4: an agent turn is a typed record (Event.AgentTurn, a Turn
// whose calls are call records) instead of JSON in Event.Data. A binary
// of version 3 would find no turn in the event and report the run
// damaged, so it refuses it as from a newer rein instead.
const Version = 4

// VersionError is a record this binary cannot read: written by a newer rein
// (Version above this binary's), or with no valid version at all.
type VersionError struct {
	RunID   string
	Record  string // which record: "seq 7", "step extract"
	Version uint64 // the record's
}

func (e *VersionError) Error() string {
	if e.Version > Version {
		return fmt.Sprintf("run %s %s: journal record version %d is from a newer rein (this binary reads up to version %d): upgrade rein",
			e.RunID, e.Record, e.Version, Version)
	}
	return fmt.Sprintf("run %s %s: journal record has no valid version (%d): the database is damaged", e.RunID, e.Record, e.Version)
}

// Newer reports whether the record is from a newer rein (rather than damaged).
func (e *VersionError) Newer() bool { return e.Version > Version }

// CheckVersion returns a *VersionError for a record of run runID (named by
// record, e.g. "seq 7") that this binary cannot read, and nil otherwise.
func CheckVersion(runID, record string, version uint64) error {
	if version < 1 || version > Version {
		return &VersionError{RunID: runID, Record: record, Version: version}
	}
	return nil
}
