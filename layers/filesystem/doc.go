// Package filesystem is the filesystem layer: it tracks the files a
// conversation refers to and injects their current content, scored by
// priority and recency within the layer's token budget, with a renderDelta
// that republishes only the files that changed.
//
// # Tracking
//
// A file is tracked when
//
//   - a user message mentions it as "#path" (relative to Options.Root),
//     e.g. "please fix #internal/parse.go.";
//   - the model calls one of Options.ReadTools, e.g. read_file with its
//     path in the "path" argument (a string or a list of strings), and
//     the call's output is appended for a call the session let run
//     (core.ItemAppendParams.CallAllowed). The call itself tracks
//     nothing: the host records it before the steering layers are asked,
//     and a denied read must not show the file it asked for;
//   - the model calls the provided function "<id>/track" (with
//     Options.Functions; "<id>/untrack" stops tracking).
//
// Only existing regular files under Root are tracked. Paths are confined to
// Root: absolute paths outside it, ".." escapes and symbolic links that
// lead out of Root are refused (the layer opens files through an os.Root,
// so a link swapped in later is refused too). A mention that names no file
// (a #hashtag, an issue number) is ignored; refusals are logged to
// Options.Logger and reported back by the provided function.
//
// The tracked set is the layer's state: paths with a recency sequence
// number (no wall clock), at most Options.MaxFiles of them; tracking one
// more evicts the lowest-priority, least recently referenced file.
// Mentioning a tracked file again makes it the most recent. Two runs of
// one thread that track files at the same time do not lose each other's
// files: the layer's Merge takes the union on a storage conflict.
//
// # Rendering
//
// Every recall re-reads the tracked files, because files change on disk.
// A content cache keyed by path and validated by size, modification time,
// status-change time, device and inode (one stat per file per turn; the
// last three where the platform reports them) keeps unchanged files from
// being read or tokenized again. A same-size rewrite that restores the
// modification time (cp -p, rsync -t) still moves the status-change time.
// A file changed in the last two seconds is not cached at all, since a
// second write in the same timestamp tick would change no time. Files are
// opened without blocking and refused unless regular, so a FIFO swapped in
// cannot hang a recall. A file renders as one developer message:
//
//	## internal/parse.go
//	```
//	...content...
//	```
//
// The fence is longer than any run of backticks in the content, so the
// content cannot close it. A file over Options.MaxFileBytes is cut at that
// size (on a UTF-8 boundary) with a note saying so; a binary file renders a
// one-line placeholder. A file that vanished renders nothing.
//
// Which files fit the budget is decided by Options.Priority (higher first),
// then recency (more recent first), then path. The chosen files are then
// rendered in path order, never in score order: the layer is anchored, and
// an order that followed recency would reshuffle the block (and break the
// prompt cache) every time a file is mentioned again. In path order a newly
// tracked, edited or evicted file changes its own message only, the same
// state always renders the same bytes, and the context update carries just
// that file.
//
// # Context updates
//
// The layer is core.PlacementAnchor: its first rendering in an epoch is
// pinned, and a later change is published after history as a context
// update. Its renderDelta compares the "## path" sections of the pinned and
// the fresh rendering and republishes only the files whose section changed
// or appeared, plus a line for each file that left the context. One edited
// file out of twelve costs one file.
package filesystem
