// Package cli is memctl: the command tree (cobra), store selection, and
// the commands. Main runs one invocation and returns its exit status;
// cmd/memctl is a three-line wrapper around it.
//
// Conventions, as kubectl, psql and git have them: subcommands with
// --help; a table fitting 80 columns by default (table.go; --wide for
// every column whole) and --json (JSON lines for lists, snake_case keys,
// units in the key names) for scripts; errors as one line on stderr, "memctl: ...", never a stack
// trace; exit status 0 ok, 1 runtime error (ErrNoStore aside), 2 usage
// error (ErrUsage, a layer rule, a bad --embedder), 3 not found
// (ErrNotFound, ErrNoStore); progress drawn only when stderr is a
// terminal; bulk deletes confirmed on a terminal or by --yes; shell
// completion for bash, zsh, fish and PowerShell, including record ids and
// flag values. Everything a human-readable line quotes from the store (or
// from the command line) goes through esc, cell, clip or escText (package
// termsafe): controls are printed as visible escapes, never raw; JSON
// output goes through termsafe.JSON, exact and free of raw controls.
//
// Stores: a directory is the embedded default, opened with embedded.Open
// (its strata.json names the embedder, so commands that never embed load
// no model); chromem://, postgres:// and qdrant:// URLs are opened with
// vectorstore.Open. Writes go through the layers' own record formats
// (memory.RecordFormat: each layer's Prepare, Validate and record ids, see
// layers.go and the add command); import and migrate through the vector
// store's validation. What a host needs too is the library's: embedders
// from specs (embed.Open), rm (environment's PlanForget), migrate's copy
// (environment.CopyRecords, and environment.CopyState for the layer state
// and recorded assemblies that export, import and migrate carry with the
// records, statecopy.go), the export format (package exportfmt).
//
// A running agent holds its embedded directory's records (an flock):
// read commands then read a snapshot of them (snapshot.go), writing
// commands fail with *LockedError naming the holder's pid and command
// line; the state store (filestore) is read and written beside it. edit
// and state edit close the store while $EDITOR runs and write with a
// compare-and-swap.
package cli
