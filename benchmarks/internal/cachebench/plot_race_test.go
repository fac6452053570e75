//go:build race

package cachebench

const raceOn = true
