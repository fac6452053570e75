//go:build race

package uselite

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
