// Package progress draws memctl's progress line for long operations
// (reindex, migrate, import, export). It draws only when asked to, and
// memctl asks only when stderr is a terminal, so piped or redirected runs
// stay quiet.
package progress
