//go:build !race

package cachebench_test

const raceEnabled = false
