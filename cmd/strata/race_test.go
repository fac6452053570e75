//go:build race

package main_test

// raceEnabled builds the strata binary under test with -race too.
const raceEnabled = true
