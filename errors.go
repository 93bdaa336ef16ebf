package rein

import "github.com/reinhq/rein/fault"

// ErrorClass is the class of a failure; it decides what the runtime does
// about it (see package fault).
type ErrorClass = fault.Class

// The error classes.
const (
	ClassTransient = fault.Transient
	ClassFormat    = fault.Format
	ClassBusiness  = fault.Business
	ClassBudget    = fault.Budget
	ClassPolicy    = fault.Policy
	ClassConflict  = fault.Conflict
	ClassNotFound  = fault.NotFound
	ClassCancelled = fault.Cancelled
)

// Transient marks err as retryable (a timeout, 429, 5xx, a reset). Go tools
// return it to have the engine retry with backoff. Nil stays nil.
func Transient(err error) error { return fault.TransientErr(err) }

// Business marks err as a failure that retrying will not fix (bad data, a
// refusal). Nil stays nil.
func Business(err error) error { return fault.BusinessErr(err) }

// Format marks err as malformed output. Nil stays nil.
func Format(err error) error { return fault.FormatErr(err) }

// ClassOf returns the class of err (Business for unclassified errors).
func ClassOf(err error) ErrorClass { return fault.ClassOf(err) }
