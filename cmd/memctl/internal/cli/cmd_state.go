package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
)

// runtimeLayer is the layer id under which the runtime keeps its own keys
// (thread bindings, recorded assemblies); no layer may use it.
const runtimeLayer = "_strata"

const stateLong = `List, show, edit and delete the runtime's layer state: what the layers keep
in the state store beside the records (a todo list, the temporal layer's
call-id replay protection, a layer's counters...), the binding of each
thread to its resource and the recorded assemblies memctl inspect shows.

  memctl state ls                               every key
  memctl state ls -r alice                      alice's, her threads' included
  memctl state show todo -t main -r alice       layer todo's state of alice's thread main
  memctl state edit todo -t main -r alice       in $EDITOR, compare-and-swap
  memctl state rm todo --scope global

A key is a scope (thread, resource or global), a scope id, a layer and a
name ("state" unless given, the name the runtime uses). The scope is
--scope, else thread when --thread is given, else resource when
--resource is given; a global key needs --scope global. A thread of a
resource is named by both: -t T -r R (its scope id joins them with \x1f).

edit and rm are compare-and-swaps, as a running session's writes are: they
write only if the value is still at the revision read (or the one
--if-revision names), and fail with nothing written when it moved on
meanwhile (exit 1); run them again. A session that loaded the value before
the edit re-reads it on its next write, which then conflicts. Values the
runtime keeps for itself (layer _strata: bindings, recorded assemblies) are
not editable; rm deletes a recorded assembly, and a binding only with
--force (memctl rm --resource/--legacy is the way to erase a tenant).

The state store is the one inspect reads: --state DIR|postgres://..., else
the config file's "state", else <dir>/state of an embedded directory, else
the database of a postgres store. An embedded directory's state store is
read and written beside a running agent.`

// stateKeyFlags name one key, or narrow a listing.
type stateKeyFlags struct {
	scope, thread, resource, layer string
}

func (f *stateKeyFlags) register(fs *pflag.FlagSet, listing bool) {
	fs.StringVar(&f.scope, "scope", "", "thread, resource or global (default from --thread/--resource)")
	fs.StringVarP(&f.thread, "thread", "t", "", "thread id")
	fs.StringVarP(&f.resource, "resource", "r", "", "resource id (with --thread: the resource's thread)")
	if listing {
		fs.StringVarP(&f.layer, "layer", "l", "", "only this layer's keys")
	}
}

// scopeOfFlags is the scope and scope id the flags name; required says a
// scope must be named (show, edit, rm).
func (f *stateKeyFlags) scopeOfFlags(required bool) (scope, scopeID string, err error) {
	for _, v := range []struct{ name, val string }{{"--thread", f.thread}, {"--resource", f.resource}} {
		if v.val != "" {
			if err := checkID(v.val); err != nil {
				return "", "", usageErrorf("%s: %s", v.name, strings.TrimPrefix(Message(err), "malformed id"))
			}
		}
	}
	scope = f.scope
	if scope == "" {
		switch {
		case f.thread != "":
			scope = "thread"
		case f.resource != "":
			scope = "resource"
		case required:
			return "", "", usageErrorf("name the key's scope: --thread, --resource (or both, for a resource's thread) or --scope global")
		default:
			return "", "", nil
		}
	}
	switch scope {
	case "thread":
		if f.thread == "" {
			return "", "", usageErrorf("--scope thread needs --thread")
		}
		return scope, storage.ThreadScopeID(f.resource, f.thread), nil
	case "resource":
		if f.resource == "" || f.thread != "" {
			return "", "", usageErrorf("--scope resource needs --resource and no --thread")
		}
		return scope, f.resource, nil
	case "global":
		if f.resource != "" || f.thread != "" {
			return "", "", usageErrorf("a global key has no thread or resource")
		}
		return scope, "", nil
	}
	return "", "", usageErrorf("--scope %q: want thread, resource or global", scope)
}

// key is the key the flags and args (LAYER [NAME]) name.
func (f *stateKeyFlags) key(args []string) (storage.Key, error) {
	scope, id, err := f.scopeOfFlags(true)
	if err != nil {
		return storage.Key{}, err
	}
	k := storage.Key{Scope: scope, ScopeID: id, Layer: args[0], Name: "state"}
	if len(args) > 1 {
		k.Name = args[1]
	}
	for _, p := range []struct{ name, v string }{{"LAYER", k.Layer}, {"NAME", k.Name}} {
		if p.v == "" || !utf8.ValidString(p.v) || strings.ContainsFunc(p.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return k, usageErrorf("%s %q: not a valid key part", p.name, p.v)
		}
	}
	if err := k.Validate(); err != nil {
		return k, usageErrorf("%v", err)
	}
	return k, nil
}

// stateEntryJSON is a state key in memctl state's JSON output.
type stateEntryJSON struct {
	Scope    string `json:"scope"`
	ScopeID  string `json:"scope_id"`
	Resource string `json:"resource,omitempty"`
	Thread   string `json:"thread,omitempty"`
	Layer    string `json:"layer"`
	Name     string `json:"name"`
	Revision int64  `json:"revision"`
	Bytes    int    `json:"bytes"`
	Assembly bool   `json:"assembly,omitempty"`
	// ValueBase64 is the value's bytes (show); Value the value when it
	// is JSON.
	Value       json.RawMessage `json:"value,omitempty"`
	ValueBase64 string          `json:"value_base64,omitempty"`
}

func entryJSON(k storage.Key, e storage.Entry, withValue bool) stateEntryJSON {
	j := stateEntryJSON{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name, Revision: e.Revision,
		Bytes: len(e.Value), Assembly: inspect.IsAssemblyKey(k)}
	switch k.Scope {
	case "thread":
		j.Resource, j.Thread = storage.SplitThreadScopeID(k.ScopeID)
	case "resource":
		j.Resource = k.ScopeID
	}
	if withValue {
		// The bytes exactly in base64; the JSON value too when it is one
		// (as JSON, whitespace aside).
		j.ValueBase64 = base64.StdEncoding.EncodeToString(e.Value)
		if json.Valid(e.Value) {
			j.Value = e.Value
		}
	}
	return j
}

// keyName names a key for messages: scope, its ids and layer/name.
func keyName(k storage.Key) string {
	var where string
	switch k.Scope {
	case "thread":
		r, t := storage.SplitThreadScopeID(k.ScopeID)
		where = fmt.Sprintf("thread %q", t)
		if r != "" {
			where += fmt.Sprintf(" of resource %q", r)
		}
	case "resource":
		where = fmt.Sprintf("resource %q", k.ScopeID)
	default:
		where = "global scope"
	}
	return fmt.Sprintf("%s/%s of %s", k.Layer, k.Name, where)
}

func (a *app) stateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "List, show, edit and delete the runtime's layer state",
		Long:  stateLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown state command %q: want ls, show, edit or rm", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.stateLsCmd(), a.stateShowCmd(), a.stateEditCmd(), a.stateRmCmd())
	return cmd
}

func (a *app) stateLsCmd() *cobra.Command {
	var f stateKeyFlags
	var noAssemblies bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the state keys, with their revisions and sizes",
		Long: `List the keys of the state store, sorted by scope, scope id, layer and name,
with each value's revision and size: all of them, or those of a scope
(-t T, -r R, -t T -r R, --scope global; -r R alone lists the resource's
scope and the scopes of its threads) and a layer (-l).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runStateLs(cmd.Context(), &f, noAssemblies) },
	}
	f.register(cmd.Flags(), true)
	cmd.Flags().BoolVar(&noAssemblies, "no-assemblies", false, "leave out the recorded assemblies")
	return cmd
}

func (a *app) runStateLs(ctx context.Context, f *stateKeyFlags, noAssemblies bool) error {
	if rc, err := a.remoteClient(); err != nil || rc != nil {
		if err != nil {
			return err
		}
		return a.remoteStateLs(ctx, rc, f, noAssemblies)
	}
	scope, id, err := f.scopeOfFlags(false)
	if err != nil {
		return err
	}
	st, loc, err := a.openState(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var keys []storage.Key
	l, canList := st.(storage.Lister)
	switch {
	case scope == "":
		keys, err = environment.StateKeys(ctx, st)
	case !canList:
		err = fmt.Errorf("%w (%T)", environment.ErrCannotList, st)
	default:
		keys, err = l.Keys(ctx, scope, id)
		if err == nil && scope == "resource" {
			// The resource's threads are its too.
			var more []storage.Key
			if more, err = threadKeysOf(ctx, st, l, f.resource); err == nil {
				keys = append(keys, more...)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("list the state in %s: %w", loc, err)
	}
	var rows []stateRow
	for _, k := range keys {
		if f.layer != "" && k.Layer != f.layer || noAssemblies && inspect.IsAssemblyKey(k) {
			continue
		}
		e, err := st.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return fmt.Errorf("read %s in %s: %w", keyName(k), loc, err)
		}
		rows = append(rows, stateRow{k, e})
	}
	return a.printStateRows(rows, loc)
}

// stateRow is a key with its value, for state ls.
type stateRow struct {
	k storage.Key
	e storage.Entry
}

// printStateRows prints state ls's rows as JSON lines or a table; loc
// names the store when there are none.
func (a *app) printStateRows(rows []stateRow, loc string) error {
	if a.flags.json {
		for _, r := range rows {
			if err := writeJSON(a.io.Out, entryJSON(r.k, r.e, false)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintf(a.io.Err, "no state keys match in %s\n", esc(loc))
		return nil
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		j := entryJSON(r.k, r.e, false)
		cells[i] = []string{j.Scope, cell(j.Resource), cell(j.Thread), cell(j.Layer), cell(j.Name),
			strconv.FormatInt(j.Revision, 10), strconv.Itoa(j.Bytes)}
	}
	return fitTable(a.io.Out, a.width(), []column{{name: "SCOPE"}, {name: "RESOURCE", min: 10}, {name: "THREAD", min: 10},
		{name: "LAYER", min: 10}, {name: "NAME", min: 14}, {name: "REV", right: true}, {name: "BYTES", right: true, drop: 1}}, cells)
}

// threadKeysOf lists the keys of the threads of resource, when the store
// can find their scope ids.
func threadKeysOf(ctx context.Context, st storage.Store, l storage.Lister, resource string) ([]storage.Key, error) {
	sl, ok := st.(storage.ScopeLister)
	if !ok {
		return nil, nil
	}
	ids, err := sl.ScopeIDs(ctx, "thread", storage.ThreadScopeID(resource, ""))
	if err != nil {
		return nil, err
	}
	var out []storage.Key
	for _, id := range ids {
		ks, err := l.Keys(ctx, "thread", id)
		if err != nil {
			return nil, err
		}
		out = append(out, ks...)
	}
	return out, nil
}

// stateHandle reads and writes one key: in the state store, or through a
// server (--server).
type stateHandle struct {
	loc   string // names the store in messages
	put   func(ctx context.Context, value []byte, expected int64) (int64, error)
	del   func(ctx context.Context, expected int64) error
	close func()
}

// openStateKey reads the key k the flags and args name, and returns a
// handle on it.
func (a *app) openStateKey(ctx context.Context, f *stateKeyFlags, k storage.Key, args []string) (*stateHandle, storage.Entry, error) {
	rc, err := a.remoteClient()
	if err != nil {
		return nil, storage.Entry{}, err
	}
	if rc == nil {
		st, loc, e, err := a.readStateKey(ctx, k)
		if err != nil {
			return nil, e, err
		}
		return &stateHandle{loc: loc, close: func() { _ = st.Close() },
			put: func(ctx context.Context, v []byte, expected int64) (int64, error) { return st.Put(ctx, k, v, expected) },
			del: func(ctx context.Context, expected int64) error { return st.Delete(ctx, k, expected) }}, e, nil
	}
	_, v, q, err := a.remoteStateKey(ctx, rc, f, args)
	if err != nil {
		return nil, storage.Entry{}, err
	}
	path := "/v1/state/" + url.PathEscape(k.Layer) + "/" + url.PathEscape(k.Name)
	h := &stateHandle{loc: rc.base.Redacted(), close: func() {},
		put: func(ctx context.Context, val []byte, expected int64) (int64, error) {
			var out remoteStateValue
			err := rc.call(ctx, http.MethodPut, path, q, map[string]any{"value": json.RawMessage(val), "revision": expected}, &out)
			return out.Revision, err
		},
		del: func(ctx context.Context, expected int64) error {
			dq := url.Values{}
			for key, vs := range q {
				dq[key] = vs
			}
			dq.Set("revision", strconv.FormatInt(expected, 10))
			return rc.call(ctx, http.MethodDelete, path, dq, nil, nil)
		}}
	return h, storage.Entry{Value: v.Value, Revision: v.Revision}, nil
}

// readStateKey opens the state store and reads k: not found (exit 3)
// naming the key and the store when it holds none.
func (a *app) readStateKey(ctx context.Context, k storage.Key) (storage.Store, string, storage.Entry, error) {
	st, loc, err := a.openState(ctx)
	if err != nil {
		return nil, "", storage.Entry{}, err
	}
	e, err := st.Get(ctx, k)
	if errors.Is(err, storage.ErrNotFound) {
		err = notFoundf("no state %s in %s (memctl state ls lists the keys)", keyName(k), loc)
	}
	if err != nil {
		_ = st.Close()
		return nil, "", storage.Entry{}, err
	}
	return st, loc, e, nil
}

func (a *app) stateShowCmd() *cobra.Command {
	var f stateKeyFlags
	cmd := &cobra.Command{
		Use:   "show LAYER [NAME]",
		Short: "Show one state value",
		Long: `Show one value of the state store: its key, revision and size, and the value,
indented when it is JSON (escaped: controls are printed as visible
escapes). --json prints {"scope", "scope_id", "layer", "name", "revision",
"bytes", "value_base64", "value"}: the value's bytes exactly in base64 and,
when it is JSON, the value as JSON.`,
		Args: rangeArgs(1, 2, "LAYER and an optional NAME"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runStateShow(cmd.Context(), &f, args) },
	}
	f.register(cmd.Flags(), false)
	return cmd
}

func (a *app) runStateShow(ctx context.Context, f *stateKeyFlags, args []string) error {
	k, err := f.key(args)
	if err != nil {
		return err
	}
	h, e, err := a.openStateKey(ctx, f, k, args)
	if err != nil {
		return err
	}
	defer h.close()
	loc := h.loc
	if a.flags.json {
		return writeJSON(a.io.Out, entryJSON(k, e, true))
	}
	w := a.io.Out
	fmt.Fprintf(w, "Key:       %s\n", esc(keyName(k)))
	fmt.Fprintf(w, "Store:     %s\n", esc(loc))
	fmt.Fprintf(w, "Revision:  %d\n", e.Revision)
	fmt.Fprintf(w, "Size:      %s\n", plural(len(e.Value), "byte", "bytes"))
	var ind bytes.Buffer
	switch {
	case json.Valid(e.Value) && json.Indent(&ind, e.Value, "", "  ") == nil:
		fmt.Fprintf(w, "Value:\n%s\n", indent(escText(ind.String())))
	case utf8.Valid(e.Value):
		fmt.Fprintf(w, "Value (not JSON):\n%s\n", indent(escText(string(e.Value))))
	default:
		fmt.Fprintf(w, "Value (binary, base64):\n  %s\n", base64.StdEncoding.EncodeToString(e.Value))
	}
	return nil
}

type stateEditFlags struct {
	stateKeyFlags
	file       string
	ifRevision int64
}

func (a *app) stateEditCmd() *cobra.Command {
	var f stateEditFlags
	cmd := &cobra.Command{
		Use:   "edit LAYER [NAME]",
		Short: "Change one state value (compare-and-swap)",
		Long: `Change one value of the state store. With --file F (- for stdin), the value
becomes what F holds; with no --file on a terminal, $VISUAL or $EDITOR
opens on the value (indented JSON), as memctl edit does for a memory.
A value that is JSON must stay JSON (it is stored compact); a value that is
not JSON is replaced by the bytes given.

The write is a compare-and-swap at the revision read when the edit began
(or --if-revision N): if a running session wrote the value meanwhile,
nothing is written and edit fails (exit 1); run it again on the new value.
The runtime's own keys (layer _strata) are not editable.`,
		Args: rangeArgs(1, 2, "LAYER and an optional NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStateEdit(cmd.Context(), &f, args, cmd.Flags().Changed("if-revision"))
		},
	}
	f.register(cmd.Flags(), false)
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "the new value (- for stdin)")
	cmd.Flags().Int64Var(&f.ifRevision, "if-revision", 0, "write only if the value is at this revision")
	return cmd
}

func (a *app) runStateEdit(ctx context.Context, f *stateEditFlags, args []string, ifRev bool) error {
	k, err := f.key(args)
	if err != nil {
		return err
	}
	if k.Layer == runtimeLayer {
		return usageErrorf("%s is the runtime's own (a binding or a recorded assembly): not editable; memctl state rm deletes a recorded assembly", keyName(k))
	}
	h, e, err := a.openStateKey(ctx, &f.stateKeyFlags, k, args)
	if err != nil {
		return err
	}
	defer h.close()
	loc := h.loc
	expected := e.Revision
	if ifRev {
		if f.ifRevision != e.Revision {
			return fmt.Errorf("%w: %s is at revision %d, not %d: nothing written", storage.ErrConflict, keyName(k), e.Revision, f.ifRevision)
		}
		expected = f.ifRevision
	}
	var raw []byte
	from := "the edited file"
	switch f.file {
	case "":
		if raw, err = a.editValueInEditor(e.Value); err != nil {
			return err
		}
	case "-":
		from = "stdin"
		if raw, err = io.ReadAll(io.LimitReader(a.io.In, 64<<20)); err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	default:
		from = f.file
		if raw, err = os.ReadFile(f.file); err != nil {
			return fmt.Errorf("read %s: %w", f.file, err)
		}
	}
	value := raw
	if json.Valid(e.Value) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return usageErrorf("%s: the value of %s is JSON and must stay JSON: %v", from, keyName(k), err)
		}
		value = buf.Bytes()
		var old bytes.Buffer
		if json.Compact(&old, e.Value) == nil && bytes.Equal(old.Bytes(), value) {
			value = e.Value // the same JSON: left as it was
		}
	}
	action := "unchanged"
	rev := e.Revision
	if !bytes.Equal(value, e.Value) {
		rev, err = h.put(ctx, value, expected)
		if errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("%s changed in %s while it was edited (a running session wrote it): nothing written; run memctl state edit again: %w", keyName(k), loc, err)
		}
		if err != nil {
			return fmt.Errorf("write %s in %s: %w", keyName(k), loc, err)
		}
		action = "updated"
	}
	if a.flags.json {
		j := entryJSON(k, storage.Entry{Value: value, Revision: rev}, false)
		return writeJSON(a.io.Out, map[string]any{"key": j, "action": action})
	}
	fmt.Fprintf(a.io.Out, "%s: %s (revision %d)\n", esc(keyName(k)), action, rev)
	return nil
}

// editValueInEditor opens $VISUAL or $EDITOR on a state value, indented
// when it is JSON, and returns what the operator saved.
func (a *app) editValueInEditor(value []byte) ([]byte, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if _, ok := a.terminalIn(); editor == "" || !ok {
		return nil, usageErrorf("nothing to change: give --file F (an editor opens only on a terminal with $EDITOR set)")
	}
	shown := value
	var ind bytes.Buffer
	if json.Valid(value) && json.Indent(&ind, value, "", "  ") == nil {
		shown = append(ind.Bytes(), '\n')
	}
	dir, err := os.MkdirTemp("", "memctl-state-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, shown, 0o600); err != nil {
		return nil, err
	}
	parts := strings.Fields(editor)
	c := exec.Command(parts[0], append(parts[1:], path)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("editor %s: %w", parts[0], err)
	}
	return os.ReadFile(path)
}

type stateRmFlags struct {
	stateKeyFlags
	ifRevision    int64
	dryRun, force bool
}

func (a *app) stateRmCmd() *cobra.Command {
	var f stateRmFlags
	cmd := &cobra.Command{
		Use:   "rm LAYER [NAME]",
		Short: "Delete one state value (compare-and-swap)",
		Long: `Delete one value of the state store, at the revision read (or --if-revision
N): if a running session wrote it meanwhile, nothing is deleted and rm
fails (exit 1). The layer starts from its empty state on its next run.
A thread's binding to its resource (_strata/resource) is deleted only
with --force: without it the thread can be bound to another resource,
which then reads the thread's legacy state; memctl rm --resource and
--legacy erase a tenant's state safely.`,
		Args: rangeArgs(1, 2, "LAYER and an optional NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStateRm(cmd.Context(), &f, args, cmd.Flags().Changed("if-revision"))
		},
	}
	f.register(cmd.Flags(), false)
	cmd.Flags().Int64Var(&f.ifRevision, "if-revision", 0, "delete only if the value is at this revision")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "say what would be deleted, delete nothing")
	cmd.Flags().BoolVar(&f.force, "force", false, "delete a thread's binding to its resource too")
	return cmd
}

func (a *app) runStateRm(ctx context.Context, f *stateRmFlags, args []string, ifRev bool) error {
	k, err := f.key(args)
	if err != nil {
		return err
	}
	if k.Layer == runtimeLayer && !inspect.IsAssemblyKey(k) && !f.force {
		return usageErrorf("%s is the runtime's own (a thread's binding to its resource): pass --force to delete it, or erase the tenant with memctl rm --resource", keyName(k))
	}
	h, e, err := a.openStateKey(ctx, &f.stateKeyFlags, k, args)
	if err != nil {
		return err
	}
	defer h.close()
	loc := h.loc
	expected := e.Revision
	if ifRev {
		expected = f.ifRevision
	}
	action := "deleted"
	if f.dryRun {
		action = "would be deleted (dry run)"
		if expected != e.Revision {
			return fmt.Errorf("%w: %s is at revision %d, not %d", storage.ErrConflict, keyName(k), e.Revision, expected)
		}
	} else if err := h.del(ctx, expected); errors.Is(err, storage.ErrConflict) {
		return fmt.Errorf("%s changed in %s since it was read (a running session wrote it): nothing deleted; run memctl state rm again: %w", keyName(k), loc, err)
	} else if err != nil {
		return fmt.Errorf("delete %s in %s: %w", keyName(k), loc, err)
	}
	if a.flags.json {
		return writeJSON(a.io.Out, map[string]any{"key": entryJSON(k, e, false), "action": strings.Fields(action)[0], "dry_run": f.dryRun})
	}
	fmt.Fprintf(a.io.Out, "%s at revision %s: %s\n", esc(keyName(k)), strconv.FormatInt(e.Revision, 10), action)
	return nil
}
