// Package termsafe makes text that memctl did not write safe to print on
// an operator's terminal.
//
// Memories are written by models, and a prompt-injected model can plant
// terminal control sequences in them: an OSC sequence that retitles the
// window or writes the clipboard, a CSI sequence that clears the screen or
// moves the cursor to overwrite what was printed, a carriage return or a
// bidirectional override that makes a line read other than it is. Every
// human-readable line memctl prints passes the text it quotes through
// Escape (one-line values: table cells, ids, error messages) or Text
// (multi-line blocks, which keep their newlines and tabs), which replace
// each such character with a visible escape:
//
//	"\x1b]0;pwned\x07"  ->  `\x1b]0;pwned\x07`
//	"\u009b2J"          ->  `\u009b2J`
//	"abc\u202edef"      ->  `abc\u202edef`
//
// Machine-readable output stays exact: JSON rewrites the few characters
// encoding/json leaves raw (DEL, the C1 controls and the bidirectional
// controls) as \u escapes, which decode to the same string.
package termsafe
