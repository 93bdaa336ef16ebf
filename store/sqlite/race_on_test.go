//go:build race

package sqlite

// raceDetector reports whether the tests run under the race detector.
const raceDetector = true
