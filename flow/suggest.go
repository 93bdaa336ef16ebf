package flow

// DidYouMean returns ` (did you mean "x"?)` for the candidate closest to
// name within edit distance 2, or "": the one suggestion of the flow's
// diagnostics, for callers that name a step or a field.
func DidYouMean(name string, candidates []string) string {
	return didYouMean(name, candidates)
}
