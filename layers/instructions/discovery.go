package instructions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/internal/layeropt"
)

// Discovery defaults.
const (
	// DefaultDiscoveryID is the discovery layer's id when
	// DiscoveryOptions.ID is empty.
	DefaultDiscoveryID = "instructions-discovery"
	// maxReadPaths bounds the paths one read call is looked at for, so a
	// call naming thousands of files costs a bounded number of stats.
	maxReadPaths = 64
)

// DefaultNames are the instructions files discovery looks for in each
// directory when DiscoveryOptions.Names is empty, in order of
// preference: the first one present in a directory is its instructions.
var DefaultNames = []string{"AGENTS.md", "CLAUDE.md", "NOETA.md"}

// ReadTool names a tool whose calls read a file. It has the same fields
// as filesystem.ReadTool, so a host watching the same tools with both
// layers can convert one into the other.
type ReadTool struct {
	// Name is the function name, e.g. "read_file".
	Name string
	// Arg is the argument holding the path (a string) or paths (a list of
	// strings), relative to the workspace or absolute, e.g. "path".
	Arg string
}

// DiscoveryOptions configure NewDiscovery. Workspace and ReadTools are
// required.
type DiscoveryOptions struct {
	// ID names the layer; DefaultDiscoveryID when empty.
	ID string
	// Workspace is the root directory reads are relative to and confined
	// to. Its own instructions file is not discovered: load it before the
	// loop with New (Options.Files), where it belongs to the stable head.
	Workspace string
	// ReadTools are the tools whose successful calls trigger discovery.
	ReadTools []ReadTool
	// Names are the instructions file names looked for in each directory,
	// in order of preference; DefaultNames when empty. Plain file names,
	// without separators.
	Names []string
	// ReadFailed reports that a read tool's call failed, judging by the
	// call and its output; a failed read discovers nothing. Nil means
	// DefaultReadFailed. It is called from the layer's hook, for every
	// session of the runtime: it must be safe for concurrent use.
	ReadFailed func(call, output core.Item) bool
	// Slot defaults to DefaultSlot. The layer renders nothing itself; the
	// slot orders its item hook among the other layers'.
	Slot core.Slot
	// Scope keeps which directories contributed; core.ScopeExecution by
	// default. See the package doc.
	Scope core.Scope
	// MaxFileBytes bounds each instructions file; 0 means
	// DefaultMaxFileBytes. A larger file is refused, not cut.
	MaxFileBytes int64
	// Logger receives refused instructions files (too large, not text, a
	// link out of the workspace). Nil discards.
	Logger *slog.Logger
	// Timeouts override the runtime's hook timeouts (OnItemAppend reads
	// the files).
	Timeouts core.Timeouts
}

// DiscoveryState is what discovery keeps: the directories that
// contributed their instructions file, slash separated and relative to
// the workspace, sorted.
type DiscoveryState struct {
	Dirs []string `json:"dirs,omitempty"`
}

// DefaultReadFailed is the default DiscoveryOptions.ReadFailed: a read
// failed when its output starts with "error" in any case (after leading
// white space), as the runtime's own refusals ("error: ...") and most
// tools' failures do. A read whose file does not exist is never taken as
// a success whatever the output says: discovery checks the file itself.
func DefaultReadFailed(_, output core.Item) bool {
	out := strings.TrimLeftFunc(output.Output, unicode.IsSpace)
	return len(out) >= 5 && strings.EqualFold(out[:5], "error")
}

// NewDiscovery validates opts and returns the discovery layer: after a
// successful read of a file inside the workspace it activates, as
// resident content of kind core.ContentInstructions, the instructions
// file of each directory between the workspace root (excluded) and the
// file, shallowest first, once per directory. See the package doc.
//
// Discovery is a layer of its own rather than an option of New: it has
// its own state (the directories that contributed, not a loaded copy),
// its own scope and its own hook, and a host turns it on by adding it to
// Config.Layers next to (or without) the load-once layer. Invalid options
// fail with a *core.ConfigError naming the field.
func NewDiscovery(opts DiscoveryOptions) (core.Layer[DiscoveryState], error) {
	if opts.ID == "" {
		opts.ID = DefaultDiscoveryID
	}
	bad := func(field, reason string) error { return layeropt.Error(opts.ID, field, reason) }
	if opts.Workspace == "" {
		return core.Layer[DiscoveryState]{}, bad("Workspace", "empty: discovery needs a directory to confine reads to")
	}
	abs, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return core.Layer[DiscoveryState]{}, bad("Workspace", err.Error())
	}
	if len(opts.ReadTools) == 0 {
		return core.Layer[DiscoveryState]{}, bad("ReadTools", "empty: no call would ever discover anything")
	}
	reads := map[string]string{}
	for i, rt := range opts.ReadTools {
		f := fmt.Sprintf("ReadTools[%d].", i)
		switch {
		case rt.Name == "":
			return core.Layer[DiscoveryState]{}, bad(f+"Name", "empty")
		case rt.Arg == "":
			return core.Layer[DiscoveryState]{}, bad(f+"Arg", "empty")
		}
		if _, dup := reads[rt.Name]; dup {
			return core.Layer[DiscoveryState]{}, bad(f+"Name", fmt.Sprintf("tool %q listed twice", rt.Name))
		}
		reads[rt.Name] = rt.Arg
	}
	names := opts.Names
	if len(names) == 0 {
		names = DefaultNames
	}
	names = slices.Clone(names)
	for i, n := range names {
		field := fmt.Sprintf("Names[%d]", i)
		switch {
		case n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\`) || filepath.Base(n) != n || !filepath.IsLocal(n):
			return core.Layer[DiscoveryState]{}, bad(field, fmt.Sprintf("%q is not a plain file name", n))
		case slices.Contains(names[:i], n):
			return core.Layer[DiscoveryState]{}, bad(field, fmt.Sprintf("%q is listed twice", n))
		}
	}
	if opts.Scope, err = layeropt.Scope(opts.ID, opts.Scope, core.ScopeExecution); err != nil {
		return core.Layer[DiscoveryState]{}, err
	}
	if opts.MaxFileBytes, err = layeropt.Limit(opts.ID, "MaxFileBytes", opts.MaxFileBytes, DefaultMaxFileBytes); err != nil {
		return core.Layer[DiscoveryState]{}, err
	}
	if opts.Slot == 0 {
		opts.Slot = DefaultSlot
	}
	d := &discoverer{id: opts.ID, root: abs, reads: reads, names: names, failed: opts.ReadFailed,
		max: opts.MaxFileBytes, log: opts.Logger}
	if d.failed == nil {
		d.failed = DefaultReadFailed
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return core.Layer[DiscoveryState]{
		ID: opts.ID, Name: "Instructions discovery", Slot: opts.Slot, Scope: opts.Scope,
		Timeouts: opts.Timeouts,
		Hooks: core.Hooks[DiscoveryState]{
			Init:         d.init,
			OnItemAppend: d.onItemAppend,
		},
		Merge: mergeDirs,
	}, nil
}

// discoverer is the configured discovery, immutable after NewDiscovery so
// one layer serves concurrent sessions.
type discoverer struct {
	id     string
	root   string // absolute
	reads  map[string]string
	names  []string
	failed func(call, output core.Item) bool
	max    int64
	log    *slog.Logger
}

func (d *discoverer) init(_ context.Context, p core.InitParams) (DiscoveryState, error) {
	info, err := os.Stat(d.root)
	if err != nil {
		return DiscoveryState{}, fmt.Errorf("instructions: discovery workspace: %w", err)
	}
	if !info.IsDir() {
		return DiscoveryState{}, fmt.Errorf("instructions: discovery workspace %q is not a directory", d.root)
	}
	var st DiscoveryState
	if len(p.Stored) > 0 {
		if err := json.Unmarshal(p.Stored, &st); err != nil {
			return DiscoveryState{}, fmt.Errorf("instructions: decode stored discovery state: %w", err)
		}
	}
	return st, nil
}

// onItemAppend discovers on the output of an allowed, successful read:
// never on the call itself, which is recorded before the steering layers
// may deny it.
func (d *discoverer) onItemAppend(ctx context.Context, p core.ItemAppendParams[DiscoveryState]) (*DiscoveryState, error) {
	if p.Item.Type != core.TypeFunctionCallOutput || !p.CallAllowed || p.Call == nil {
		return nil, nil
	}
	paths := d.readPaths(*p.Call)
	if len(paths) == 0 || d.failed(*p.Call, p.Item) {
		return nil, nil
	}
	var root *os.Root
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	done := slices.Clone(p.State.Dirs)
	changed := false
	for _, raw := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, ok := d.local(raw)
		if !ok {
			continue
		}
		// Reads under directories that all contributed already, the
		// common case once the model works in one package, touch no disk.
		dirs := slices.DeleteFunc(ancestors(filepath.ToSlash(name)), func(dir string) bool {
			_, found := slices.BinarySearch(done, dir)
			return found
		})
		if len(dirs) == 0 {
			continue
		}
		if root == nil {
			var err error
			if root, err = os.OpenRoot(d.root); err != nil {
				return nil, fmt.Errorf("instructions: discovery: open workspace: %w", err)
			}
		}
		// The file itself must be a regular file reached inside the
		// workspace: os.Root refuses a path through a link that leads
		// out, so its directories are the workspace's own.
		if info, err := root.Stat(name); err != nil || !info.Mode().IsRegular() {
			continue
		}
		for _, dir := range dirs {
			if _, found := slices.BinarySearch(done, dir); found {
				continue // contributed through an earlier path of this call
			}
			c, ok := d.find(ctx, root, dir)
			if !ok {
				continue
			}
			if err := p.Activate(c); err != nil {
				return nil, fmt.Errorf("instructions: discovery: activate %q: %w", c.Key, err)
			}
			i, _ := slices.BinarySearch(done, dir)
			done = slices.Insert(done, i, dir)
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	return &DiscoveryState{Dirs: done}, nil
}

// readPaths returns the paths a call to a read tool names, at most
// maxReadPaths.
func (d *discoverer) readPaths(call core.Item) []string {
	arg, ok := d.reads[call.Name]
	if call.Type != core.TypeFunctionCall || !ok {
		return nil
	}
	args, err := core.DecodeArguments[map[string]any](call.Arguments)
	if err != nil {
		return nil
	}
	var out []string
	switch v := args[arg].(type) {
	case string:
		out = []string{v}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out[:min(len(out), maxReadPaths)]
}

// local turns a path as the model wrote it into a local path under the
// workspace (OS separators), without touching the disk. Any ".." element
// is refused, not cleaned away: "a/link/../x" names a different place
// for the kernel than for a lexical clean when a/link is a symbolic link,
// and the read tool resolved it the kernel's way.
func (d *discoverer) local(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || !utf8.ValidString(raw) || strings.ContainsFunc(raw, unicode.IsControl) {
		return "", false
	}
	name := filepath.FromSlash(raw)
	for _, el := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if el == ".." {
			return "", false
		}
	}
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(d.root, filepath.Clean(name))
		if err != nil {
			return "", false
		}
		name = rel
	}
	name = filepath.Clean(name)
	if !filepath.IsLocal(name) {
		return "", false
	}
	return name, true
}

// ancestors are the directories from the workspace root (excluded) down
// to the directory of file (a slash-separated local path), shallowest
// first: "a/b/c.go" gives "a", "a/b".
func ancestors(file string) []string {
	dir := path.Dir(file)
	if dir == "." {
		return nil
	}
	parts := strings.Split(dir, "/")
	out := make([]string, len(parts))
	for i := range parts {
		out[i] = strings.Join(parts[:i+1], "/")
	}
	return out
}

// find returns the instructions of dir: its first present file of
// d.names. The first name present decides: a refused file (too large,
// not text, a link out of the workspace) gives no instructions rather
// than falling back to the next name, so what the model reads never
// depends on which file happens to be broken. A directory whose file is
// refused or empty has not contributed, and is looked at again on the
// next read under it.
func (d *discoverer) find(ctx context.Context, root *os.Root, dir string) (core.Content, bool) {
	for _, n := range d.names {
		key := dir + "/" + n
		text, err := readText(root, d.root, filepath.FromSlash(key), d.max)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			d.log.LogAttrs(ctx, slog.LevelWarn, "instructions: discovered file refused", slog.String("layer", d.id),
				slog.String("path", key), slog.String("reason", err.Error()))
			return core.Content{}, false
		case strings.TrimSpace(text) == "":
			return core.Content{}, false
		}
		return core.Content{Kind: core.ContentInstructions, Key: key, Text: text}, true
	}
	return core.Content{}, false
}

// mergeDirs resolves a storage conflict between two runs of one scope
// that discovered concurrently: the union of their directories.
func mergeDirs(stored, mine DiscoveryState) DiscoveryState {
	dirs := slices.Concat(stored.Dirs, mine.Dirs)
	slices.Sort(dirs)
	return DiscoveryState{Dirs: slices.Compact(dirs)}
}
