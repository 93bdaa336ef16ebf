package engine

// LastPerStep exposes lastPerStep to the external tests.
var LastPerStep = lastPerStep

// CachedBindings is how many flows e keeps bound.
func CachedBindings(e *Engine) int { return e.bindings.Len() }
