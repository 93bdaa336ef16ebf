package engine

// LastPerStep exposes lastPerStep to the external tests.
var LastPerStep = lastPerStep
