//go:build race

package recallquality

// raceEnabled: the test binary runs under the race detector, where the
// model runs several times slower.
const raceEnabled = true
