// Package journal owns what rein writes to a run's journal: the run and
// step states, the record types (Event, the step record Step), their
// versioned encoding and decoding, and the refusal of records a newer rein
// wrote. Effect (a call that touched the world) and Remediation (what was
// done about one) travel in an Event's Data (call_effect, remediation).
//
// The encoders are hand-written for the hot path (they do not allocate when
// the buffer has room) and the decoders are encoding/json's. A test fills
// every field of every record type by reflection (journal/journaltest),
// encodes, decodes and requires deep equality and encoding/json's bytes, so
// a field added to a record that an encoder or decoder forgets fails it and
// names the field. Adding a field: add it to the struct with its json tag,
// then to the encoder (AppendEvent, StepRecord.AppendJSON and EncodeStep /
// DecodeStep for a step); the tests say what is missing. A field that old
// journals lack must read as its zero value; a change that old binaries
// cannot read raises Version.
//
// Some events carry a record of their own as JSON in Event.Data, encoded
// and decoded here too: TierChange (risk_tier) and Review (review).
//
// trace and store re-export these types as aliases (trace.Event,
// trace.StepStatus, store.Step, …); both names are the same type.
package journal
