// Package casegen generates test cases from a JSON Schema: a minimal value
// the schema accepts, the boundaries it allows (minimum, maximum, their
// exclusive forms, minLength, maxLength, enum members, minItems,
// maxItems), and the ways to break it (a required field missing, a field
// of the wrong type, a value past a bound, a property additionalProperties:
// false refuses). rein test (cmd/rein) runs them against a flow.
//
// Generation is deterministic: the same schema (and base) gives the same
// cases, in the same order, with the same names ("amount=maximum",
// "-customer (missing)", "amount: wrong type"). It is bounded: at most
// Options.MaxCases cases per schema (the rest are counted, not made),
// nested objects to MaxDepth, local $refs to a fixed depth, lists and
// strings to MaxLength. Every case is checked against the schema itself
// (Options.Check, the compiled schema's Validate): a case meant to be
// valid that the schema refuses (a pattern the generator could not
// satisfy), or one meant to be invalid that it accepts, is kept with
// Skip saying why, and never run as if it were what it was meant to be.
package casegen
