//go:build !race

package app_test

// raceDetector: see race_on_test.go.
const raceDetector = false
