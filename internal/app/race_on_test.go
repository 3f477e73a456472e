//go:build race

package app_test

// raceDetector: the race detector slows the server several times, so
// the console's time to interactive (which waits for the server's
// answers) is logged, not asserted, under it.
const raceDetector = true
