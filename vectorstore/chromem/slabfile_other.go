//go:build !(linux || darwin || freebsd)

package chromem

import (
	"slices"
	"strings"
)

// slabFile is unavailable without mmap: everything stays on the heap.
type slabFile struct{}

func openSlabFile(string) *slabFile                   { return nil }
func (*slabFile) seal([]float32) []float32            { return nil }
func (*slabFile) release([]float32)                   {}
func (*slabFile) mapped([]float32) bool               { return false }
func (*slabFile) readFloats(_, v []float32) []float32 { return v }
func (*slabFile) cloneFloats(v []float32) []float32   { return slices.Clone(v) }
func (*slabFile) cloneString(t string) string         { return strings.Clone(t) }
func (*slabFile) trim()                               {}
func (*slabFile) close()                              {}

// textSink keeps every text on the heap.
type textSink struct{}

func newTextSink(*slabFile) *textSink  { return nil }
func (*textSink) text(b []byte) string { return string(b) }
func (*textSink) flush() error         { return nil }
