// Package instructions is the load-once instructions layer:
// instructional content from a string and from files, rendered at the
// front of the context and held still there so the prompt cache keeps it.
// NewDiscovery adds, when a host asks for it, the instructions files of
// the directories the model reads into (see the Discovery section).
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
//
// # Discovery
//
// A monorepo keeps instructions next to the code they govern:
// svc/api/AGENTS.md says how the API package is built. NewDiscovery
// returns a second layer, off unless the host adds it, that finds them as
// the model reads its way in. After a successful read of a file inside
// DiscoveryOptions.Workspace (the output of a call of one of ReadTools
// that the session let run, core.ItemAppendParams.CallAllowed, and that
// ReadFailed does not call failed), it walks from the workspace root to
// the file's directory, shallowest first, and for each directory that has
// not contributed yet activates the first of DiscoveryOptions.Names
// present there (DefaultNames: AGENTS.md, then CLAUDE.md, then NOETA.md)
// as resident content of kind core.ContentInstructions, keyed by its
// workspace-relative path:
//
//	<instructions key="svc/api/AGENTS.md">
//	...file content...
//	</instructions>
//
// The workspace root itself is left out: its file belongs in the stable
// head, loaded before the loop by New (Options.Files), not in history.
// The activations are logged after the batch of items being appended, so
// they land after that turn's tool outputs, and they render in history at
// that point, never splitting a call from its output; a compaction mounts
// them again after its summary (see core.Session.Activate).
//
// Discovery is fenced to the workspace even where the read tool is not: a
// path with a ".." element is refused outright (not cleaned: through a
// symbolic link ".." names another place than a lexical clean says), an
// absolute path must lie under the workspace, and the read file must be a
// regular file reached inside it. Files are opened through an os.Root, so
// a directory or an instructions file that is a symbolic link leading out
// discovers nothing. A read that names no existing file discovers nothing
// whatever its output says. Instructions files follow the load-once
// layer's rules (MaxFileBytes, UTF-8 text, regular files only); a refused
// one is logged to DiscoveryOptions.Logger and the directory gives nothing
// (the next name is not tried instead: what the model reads must not
// depend on which file is broken) until a later read finds it fixed.
//
// By default a read failed when its output starts with "error", in any
// case (DefaultReadFailed): the runtime's own refusals and most tools'
// failures read that way. A host whose tool reports failure otherwise sets
// DiscoveryOptions.ReadFailed.
//
// The directories that contributed are the layer's state
// (DiscoveryState), kept per DiscoveryOptions.Scope. The default,
// core.ScopeExecution, starts each run afresh: a run resumed from its log
// (core.RunOptions.History) still logs no activation twice, because the
// runtime activates a key once per run and the log already holds it. A
// durable scope (core.ScopeThread) remembers across the thread's runs, so
// a later run neither re-reads nor re-activates what the thread already
// has; use it only when every run of the thread resumes the thread's log,
// since a run without that log would not see the instructions at all.
package instructions
