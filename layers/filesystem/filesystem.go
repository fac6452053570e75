package filesystem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/layers/internal/layeropt"
	"github.com/stratamem/strata/tokens"
)

// Defaults.
const (
	// DefaultID is the layer id when Options.ID is empty.
	DefaultID = "filesystem"
	// DefaultMaxFileBytes is how much of one file is shown when
	// Options.MaxFileBytes is 0.
	DefaultMaxFileBytes = 32 << 10
	// DefaultMaxFiles bounds the tracked set when Options.MaxFiles is 0.
	DefaultMaxFiles = 64
)

// Errors of resolving a path, matched with errors.Is. They reach the model
// through the provided functions and the host through Options.Logger.
var (
	// ErrOutsideRoot: the path is absolute outside Root, climbs out with
	// "..", or resolves out through a symbolic link.
	ErrOutsideRoot = errors.New("filesystem: path outside root")
	// ErrNotFile: the path names no regular file (missing, a directory, a
	// device). Missing files also match fs.ErrNotExist.
	ErrNotFile = errors.New("filesystem: not a regular file")
)

// ReadTool names a tool whose calls read a file the layer should track.
type ReadTool struct {
	// Name is the function name, e.g. "read_file".
	Name string
	// Arg is the argument holding the path (a string) or paths (a list of
	// strings), e.g. "path".
	Arg string
}

// Options configure the layer. Root is required.
type Options struct {
	// ID names the layer and prefixes its functions; DefaultID when empty.
	ID string
	// Root is the directory files are relative to and confined to.
	Root string
	// Slot defaults to core.SlotRAG.
	Slot core.Slot
	// Scope of the tracked set; core.ScopeThread by default.
	Scope core.Scope
	// Budget defaults to auto. The layer fits its output to the budget
	// itself, dropping the lowest-scored files.
	Budget core.Budget
	// MaxFileBytes is how much of one file is shown; 0 means
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxFiles bounds the tracked set; 0 means DefaultMaxFiles.
	MaxFiles int
	// Priority scores a path (slash separated, relative to Root); higher
	// is kept first when the budget is short. Nil scores every path 0.
	// It must be a pure function of the path: the same state must render
	// the same bytes.
	Priority func(path string) int
	// ReadTools are tools whose calls track the file they read. None by
	// default. A read is tracked when its output is appended for a call
	// the session let run (core.ItemAppendParams.CallAllowed: the host
	// asked Session.BeforeToolCall, or routed it through
	// Session.ExecuteTool, as package agent does), never when the call is
	// recorded: the steering layers may still deny it.
	ReadTools []ReadTool
	// DisableMentions stops tracking "#path" mentions in user messages.
	DisableMentions bool
	// Functions provides "<id>/track" and "<id>/untrack" to the model.
	Functions bool
	// Tokenizer counts rendered files to fit the budget; nil means
	// tokens.Estimate(). Give it the runtime's tokenizer for exact fits.
	Tokenizer tokens.Tokenizer
	// Logger receives refused and unreadable paths. Nil discards.
	Logger *slog.Logger
	// Timeouts override the runtime's hook timeouts.
	Timeouts core.Timeouts
}

// File is one tracked file.
type File struct {
	// Path is slash separated, relative to Root.
	Path string `json:"path"`
	// Seq is the value of State.Seq when the file was last referenced:
	// higher is more recent.
	Seq int64 `json:"seq"`
}

// State is the tracked set, sorted by path.
type State struct {
	Files []File `json:"files,omitempty"`
	// Seq counts references, for recency without a clock.
	Seq int64 `json:"seq,omitempty"`
}

// Paths returns the tracked paths, sorted.
func (s State) Paths() []string {
	out := make([]string, len(s.Files))
	for i, f := range s.Files {
		out[i] = f.Path
	}
	return out
}

// layer is the configured layer, shared by every session of a runtime.
type layer struct {
	id       string
	root     string // absolute
	maxBytes int64
	maxFiles int
	priority func(string) int
	reads    map[string]string // tool name -> argument
	mentions bool
	tk       tokens.Tokenizer
	log      *slog.Logger
	cache    *contentCache
	// now is the clock the cache's settle time is measured with; tests
	// move it.
	now func() time.Time
	// fileReads counts files read from disk (cache misses), for tests and
	// tuning.
	fileReads atomic.Int64
}

// New validates opts and returns the layer. Invalid options fail with a
// *core.ConfigError naming the field. Root is checked at init.
func New(opts Options) (core.Layer[State], error) {
	if opts.ID == "" {
		opts.ID = DefaultID
	}
	l, err := newLayer(opts)
	if err != nil {
		return core.Layer[State]{}, err
	}
	return l.coreLayer(opts), nil
}

func newLayer(opts Options) (*layer, error) {
	bad := func(field, reason string) error { return layeropt.Error(opts.ID, field, reason) }
	if opts.Root == "" {
		return nil, bad("Root", "empty: the layer needs a directory to confine files to")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, bad("Root", err.Error())
	}
	if opts.Scope, err = layeropt.Scope(opts.ID, opts.Scope, core.ScopeThread); err != nil {
		return nil, err
	}
	if err := layeropt.Budget(opts.ID, opts.Budget); err != nil {
		return nil, err
	}
	if opts.MaxFileBytes, err = layeropt.Limit(opts.ID, "MaxFileBytes", opts.MaxFileBytes, DefaultMaxFileBytes); err != nil {
		return nil, err
	}
	if opts.MaxFiles, err = layeropt.Limit(opts.ID, "MaxFiles", opts.MaxFiles, DefaultMaxFiles); err != nil {
		return nil, err
	}
	reads := map[string]string{}
	for i, rt := range opts.ReadTools {
		f := fmt.Sprintf("ReadTools[%d].", i)
		switch {
		case rt.Name == "":
			return nil, bad(f+"Name", "empty")
		case rt.Arg == "":
			return nil, bad(f+"Arg", "empty")
		}
		if _, dup := reads[rt.Name]; dup {
			return nil, bad(f+"Name", fmt.Sprintf("tool %q listed twice", rt.Name))
		}
		reads[rt.Name] = rt.Arg
	}
	if opts.Slot == 0 {
		opts.Slot = core.SlotRAG
	}
	l := &layer{id: opts.ID, root: root, maxBytes: opts.MaxFileBytes, maxFiles: opts.MaxFiles,
		priority: opts.Priority, reads: reads, mentions: !opts.DisableMentions, tk: opts.Tokenizer,
		log: opts.Logger, cache: newContentCache(max(256, 4*opts.MaxFiles)), now: time.Now}
	if l.priority == nil {
		l.priority = func(string) int { return 0 }
	}
	if l.tk == nil {
		l.tk = tokens.Estimate()
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

func (l *layer) coreLayer(opts Options) core.Layer[State] {
	cl := core.Layer[State]{
		ID: opts.ID, Name: "Filesystem", Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget,
		Placement: core.PlacementAnchor, Timeouts: opts.Timeouts,
		Hooks: core.Hooks[State]{
			Init:   l.init,
			Recall: l.recall,
			RenderDelta: func(_ context.Context, p core.RenderDeltaParams[State]) (string, bool, error) {
				d, ok := Delta(p.Prev, p.Next)
				return d, ok, nil
			},
			OnItemAppend: l.onItemAppend,
		},
		Merge: l.merge,
	}
	if opts.Functions {
		cl.Functions = []core.Function[State]{
			core.NewFunction("track", "Keep files (paths relative to the project root) in context; their current content is shown on every turn.", l.trackFn),
			core.NewFunction("untrack", "Stop keeping files in context.", l.untrackFn),
		}
	}
	return cl
}

func (l *layer) init(_ context.Context, p core.InitParams) (State, error) {
	info, err := os.Stat(l.root)
	if err != nil {
		return State{}, fmt.Errorf("filesystem: root: %w", err)
	}
	if !info.IsDir() {
		return State{}, fmt.Errorf("filesystem: root %q is not a directory", l.root)
	}
	var st State
	if len(p.Stored) > 0 {
		if err := json.Unmarshal(p.Stored, &st); err != nil {
			return State{}, fmt.Errorf("filesystem: decode stored state: %w", err)
		}
	}
	return st, nil
}

// maxPathsPerItem bounds the paths one item may name, so a message full of
// '#' costs a bounded number of stats.
const maxPathsPerItem = 256

// candidates returns the raw paths an appended item refers to, at most
// maxPathsPerItem: the mentions of a user message, or the paths a read
// tool read, taken from its call when its output is appended for a call
// the session let run. The call itself tracks nothing: it is recorded
// before the steering layers are asked, and a denied read must not show
// the file it asked for.
func (l *layer) candidates(p core.ItemAppendParams[State]) []string {
	var paths []string
	switch it := p.Item; {
	case it.Type == core.TypeMessage && it.Role == core.RoleUser && l.mentions:
		paths = Mentions(it.Text())
	case it.Type == core.TypeFunctionCallOutput && p.CallAllowed && p.Call != nil:
		paths = l.readPaths(*p.Call)
	}
	return paths[:min(len(paths), maxPathsPerItem)]
}

// readPaths returns the paths a call to a read tool names.
func (l *layer) readPaths(it core.Item) []string {
	switch {
	case it.Type == core.TypeFunctionCall:
		arg, ok := l.reads[it.Name]
		if !ok {
			return nil
		}
		args, err := core.DecodeArguments[map[string]any](it.Arguments)
		if err != nil {
			return nil
		}
		switch v := args[arg].(type) {
		case string:
			return []string{v}
		case []any:
			var out []string
			for _, x := range v {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}

func (l *layer) onItemAppend(ctx context.Context, p core.ItemAppendParams[State]) (*State, error) {
	paths := l.candidates(p)
	if len(paths) == 0 {
		return nil, nil
	}
	st, _, refused, err := l.track(ctx, p.State, paths)
	if err != nil {
		return nil, err
	}
	for _, r := range refused {
		level := slog.LevelWarn
		if errors.Is(r.err, ErrNotFile) {
			// Most mentions of missing files are #hashtags and issue
			// numbers, not mistakes.
			level = slog.LevelDebug
		}
		l.log.LogAttrs(ctx, level, "filesystem: path not tracked", slog.String("layer", l.id),
			slog.String("path", r.path), slog.String("reason", r.err.Error()))
	}
	if st == nil {
		return nil, nil
	}
	return st, nil
}

type refusal struct {
	path string
	err  error
}

// track resolves paths and adds the regular files among them to st. next
// is nil when the state did not change.
func (l *layer) track(ctx context.Context, st State, paths []string) (next *State, tracked []string, refused []refusal, err error) {
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("filesystem: open root: %w", err)
	}
	defer root.Close()
	files := slices.Clone(st.Files)
	seq := st.Seq
	for _, raw := range paths {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		rel, err := l.resolve(root, raw)
		if err != nil {
			refused = append(refused, refusal{raw, err})
			continue
		}
		seq++
		tracked = append(tracked, rel)
		if i, found := slices.BinarySearchFunc(files, rel, func(f File, p string) int { return strings.Compare(f.Path, p) }); found {
			files[i].Seq = seq
		} else {
			files = slices.Insert(files, i, File{Path: rel, Seq: seq})
		}
	}
	if len(tracked) == 0 {
		return nil, nil, refused, nil
	}
	for len(files) > l.maxFiles {
		i := l.evictee(files)
		files = slices.Delete(files, i, i+1)
	}
	return &State{Files: files, Seq: seq}, tracked, refused, nil
}

// merge resolves a conflict between two runs of one thread (or resource)
// that tracked files concurrently: the union of both sets, each file at its
// more recent sequence number, bounded by MaxFiles as usual.
func (l *layer) merge(stored, mine State) State {
	files := slices.Clone(stored.Files)
	for _, f := range mine.Files {
		i, found := slices.BinarySearchFunc(files, f.Path, func(g File, p string) int { return strings.Compare(g.Path, p) })
		switch {
		case !found:
			files = slices.Insert(files, i, f)
		case f.Seq > files[i].Seq:
			files[i].Seq = f.Seq
		}
	}
	for len(files) > l.maxFiles {
		i := l.evictee(files)
		files = slices.Delete(files, i, i+1)
	}
	return State{Files: files, Seq: max(stored.Seq, mine.Seq)}
}

// evictee is the index of the lowest-priority, least recent file.
func (l *layer) evictee(files []File) int {
	worst := 0
	for i := 1; i < len(files); i++ {
		pi, pw := l.priority(files[i].Path), l.priority(files[worst].Path)
		if pi < pw || (pi == pw && files[i].Seq < files[worst].Seq) {
			worst = i
		}
	}
	return worst
}

// resolve turns a path as written into the slash-separated path relative
// to Root of an existing regular file, or says why not.
func (l *layer) resolve(root *os.Root, raw string) (string, error) {
	name, err := l.lexical(raw)
	if err != nil {
		return "", err
	}
	info, err := root.Stat(name)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) && fsutil.Escapes(l.root, name) {
			return "", fmt.Errorf("%w: %q", ErrOutsideRoot, raw)
		}
		return "", fmt.Errorf("%w: %w", ErrNotFile, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %q is a %s", ErrNotFile, raw, kind(info.Mode()))
	}
	return filepath.ToSlash(name), nil
}

func kind(m os.FileMode) string {
	if m.IsDir() {
		return "directory"
	}
	return "special file"
}

// lexical cleans a path as written into a local path under Root (OS
// separators), without touching the disk.
func (l *layer) lexical(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	// Control characters (a newline above all) would break the "## path"
	// heading a file renders under.
	if raw == "" || !utf8.ValidString(raw) || strings.ContainsFunc(raw, unicode.IsControl) {
		return "", fmt.Errorf("%w: invalid path %q", ErrNotFile, raw)
	}
	name := filepath.FromSlash(raw)
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(l.root, filepath.Clean(name))
		if err != nil {
			return "", fmt.Errorf("%w: %q", ErrOutsideRoot, raw)
		}
		name = rel
	}
	name = filepath.Clean(name)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%w: %q", ErrOutsideRoot, raw)
	}
	return name, nil
}

type pathsArgs struct {
	Paths []string `json:"paths" jsonschema:"file paths relative to the project root"`
}

func (l *layer) trackFn(ctx context.Context, st State, args pathsArgs) (string, *State, error) {
	if len(args.Paths) == 0 {
		return "", nil, &core.ArgumentError{Function: l.id + "/track", Err: errors.New("paths is empty")}
	}
	if len(args.Paths) > maxPathsPerItem {
		return "", nil, &core.ArgumentError{Function: l.id + "/track", Err: fmt.Errorf("%d paths, at most %d per call", len(args.Paths), maxPathsPerItem)}
	}
	next, tracked, refused, err := l.track(ctx, st, args.Paths)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	if len(tracked) > 0 {
		fmt.Fprintf(&b, "Tracking: %s.", strings.Join(tracked, ", "))
		kept := map[string]bool{}
		for _, f := range next.Files {
			kept[f.Path] = true
		}
		var evicted []string
		for _, f := range st.Files {
			if !kept[f.Path] {
				evicted = append(evicted, f.Path)
			}
		}
		if len(evicted) > 0 {
			fmt.Fprintf(&b, " No longer tracked (limit of %d files): %s.", l.maxFiles, strings.Join(evicted, ", "))
		}
	}
	for _, r := range refused {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		reason := "not a file under the project root"
		if errors.Is(r.err, ErrOutsideRoot) {
			reason = "outside the project root"
		}
		fmt.Fprintf(&b, "Refused %q: %s.", r.path, reason)
	}
	return b.String(), next, nil
}

func (l *layer) untrackFn(_ context.Context, st State, args pathsArgs) (string, *State, error) {
	drop := map[string]bool{}
	for _, p := range args.Paths {
		if name, err := l.lexical(p); err == nil {
			drop[filepath.ToSlash(name)] = true
		}
	}
	var files []File
	var removed []string
	for _, f := range st.Files {
		if drop[f.Path] {
			removed = append(removed, f.Path)
			continue
		}
		files = append(files, f)
	}
	if len(removed) == 0 {
		return "None of these files were tracked.", nil, nil
	}
	return fmt.Sprintf("No longer tracking: %s.", strings.Join(removed, ", ")), &State{Files: files, Seq: st.Seq}, nil
}

// read reads at most l.maxBytes of an open file. truncated says more was
// there.
func (l *layer) read(f *os.File) (data []byte, truncated bool, err error) {
	l.fileReads.Add(1)
	data, err = io.ReadAll(io.LimitReader(f, l.maxBytes+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > l.maxBytes {
		return data[:l.maxBytes], true, nil
	}
	return data, false, nil
}
