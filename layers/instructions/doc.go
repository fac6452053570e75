// Package instructions is the load-once instructions layer:
// instructional content from a string and from files, rendered at the
// front of the context and held still there so the prompt cache keeps it.
//
// # Loading
//
// Options.Text and the files named by Options.Files (paths relative to
// Options.Root) are read once, by the layer's init hook. Later turns render
// what init read; editing a file mid-run changes nothing until the next
// load. A missing, unreadable, non-text or oversized file fails init with a
// clear error naming the file (errors.Is with fs.ErrNotExist,
// ErrFileTooLarge, ErrNotText, ErrOutsideRoot). By default that aborts
// Runtime.Start: instructions are load-bearing and silently running without
// them would hide the failure. Options.OnInitError = core.InitErrorDisable
// runs without the layer instead, with a diagnostic.
//
// Files are confined to Root: absolute paths and paths with ".." are
// refused by New, and a symbolic link that leads out of Root is refused at
// init (the files are opened through an os.Root).
//
// "Once" is per scope. With the default core.ScopeExecution every run loads
// afresh. With a durable scope (thread, resource, global) the first run in
// that scope loads and saves what it read; later runs of the same thread
// (or resource) reuse the saved copy, so a thread keeps byte-identical
// instructions (and its cached prefix) even if the files are edited. A
// change of Options (text, root or file list) is detected by a fingerprint
// and loads afresh.
//
// # Rendering
//
// Each source renders as one developer message, Text first, then the files
// in the order given:
//
//	<instructions>
//	...Options.Text...
//	</instructions>
//	<instructions source="docs/style.md">
//	...file content...
//	</instructions>
//
// Content is rendered as is, without escaping (trailing newlines trimmed);
// the source attribute is XML-escaped. The same options and files always
// render the same bytes. The layer's placement is core.PlacementAnchor: it
// renders before history and its first rendering is pinned for the epoch.
// Its default slot is 10, before the other built-in layers' slots.
package instructions
