package instructions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/layers/internal/layeropt"
	"github.com/stratamem/strata/storage"
)

// Defaults.
const (
	// DefaultID is the layer id when Options.ID is empty.
	DefaultID = "instructions"
	// DefaultSlot is the slot when Options.Slot is 0: before every
	// built-in slot, so instructions open the anchor band.
	DefaultSlot core.Slot = 10
	// DefaultMaxFileBytes bounds one file when Options.MaxFileBytes is 0.
	DefaultMaxFileBytes = 256 << 10
)

// Errors of loading a file, matched with errors.Is. A missing file matches
// fs.ErrNotExist.
var (
	// ErrFileTooLarge: the file is over Options.MaxFileBytes. Instructions
	// are not cut silently.
	ErrFileTooLarge = errors.New("instructions: file too large")
	// ErrNotText: the file is not UTF-8 text (or not a regular file).
	ErrNotText = errors.New("instructions: not a text file")
	// ErrOutsideRoot: the path leads out of Options.Root (through a
	// symbolic link; lexical escapes are refused by New).
	ErrOutsideRoot = errors.New("instructions: path outside root")
)

// Options configure the layer. Set Text, Files or both.
type Options struct {
	// ID names the layer; DefaultID when empty.
	ID string
	// Text is inline instructional content, rendered first.
	Text string
	// Files are read once at init, relative to Root, and rendered after
	// Text in this order. Use slash or OS separators; absolute paths and
	// paths that climb out of Root are refused.
	Files []string
	// Root is the directory Files are relative to; the working directory
	// (at New) when empty.
	Root string
	// Slot defaults to DefaultSlot.
	Slot core.Slot
	// Scope is the load-once boundary; core.ScopeExecution by default
	// (every run loads). A durable scope loads on the scope's first run and
	// reuses that copy; see the package doc.
	Scope core.Scope
	// Budget defaults to auto. Sources past the budget are cut from the
	// end by the runtime, with a diagnostic.
	Budget core.Budget
	// MaxFileBytes bounds each file; 0 means DefaultMaxFileBytes. A larger
	// file fails init with ErrFileTooLarge.
	MaxFileBytes int64
	// OnInitError is core.InitErrorAbort (the zero value: a load failure
	// aborts the run) or core.InitErrorDisable (run without the layer).
	OnInitError core.InitErrorPolicy
	// Timeouts override the runtime's hook timeouts (Init reads the files).
	Timeouts core.Timeouts
}

// Block is one loaded source.
type Block struct {
	// Source is the file's path as given in Options.Files (slash
	// separated); empty for Options.Text.
	Source string `json:"source,omitempty"`
	Text   string `json:"text"`
}

// State is what init loaded. Durable scopes persist it.
type State struct {
	Blocks []Block `json:"blocks"`
	// Fingerprint identifies the options the blocks were loaded with, so a
	// durable copy made under other options is not reused.
	Fingerprint string `json:"fingerprint"`
}

// New validates opts and returns the layer. Invalid options fail with a
// *core.ConfigError naming the field. Files are not touched until init.
func New(opts Options) (core.Layer[State], error) {
	if opts.ID == "" {
		opts.ID = DefaultID
	}
	bad := func(field, reason string) error { return layeropt.Error(opts.ID, field, reason) }
	if opts.Text == "" && len(opts.Files) == 0 {
		return core.Layer[State]{}, bad("Text", "set Text or Files")
	}
	if !utf8.ValidString(opts.Text) {
		return core.Layer[State]{}, bad("Text", "not valid UTF-8")
	}
	files := make([]string, len(opts.Files))
	seen := map[string]bool{}
	for i, f := range opts.Files {
		field := fmt.Sprintf("Files[%d]", i)
		if f == "" {
			return core.Layer[State]{}, bad(field, "empty path")
		}
		local := filepath.Clean(filepath.FromSlash(f))
		if !filepath.IsLocal(local) {
			return core.Layer[State]{}, bad(field, fmt.Sprintf("%q is absolute or leaves Root", f))
		}
		key := filepath.ToSlash(local)
		if seen[key] {
			return core.Layer[State]{}, bad(field, fmt.Sprintf("%q is listed twice", f))
		}
		seen[key] = true
		files[i] = local
	}
	root := opts.Root
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return core.Layer[State]{}, bad("Root", err.Error())
	}
	if opts.Scope, err = layeropt.Scope(opts.ID, opts.Scope, core.ScopeExecution); err != nil {
		return core.Layer[State]{}, err
	}
	switch opts.OnInitError {
	case core.InitErrorAbort, core.InitErrorDisable:
	default:
		return core.Layer[State]{}, bad("OnInitError", fmt.Sprintf("unknown policy %q", opts.OnInitError))
	}
	if opts.Slot == 0 {
		opts.Slot = DefaultSlot
	}
	if err := layeropt.Budget(opts.ID, opts.Budget); err != nil {
		return core.Layer[State]{}, err
	}
	if opts.MaxFileBytes, err = layeropt.Limit(opts.ID, "MaxFileBytes", opts.MaxFileBytes, DefaultMaxFileBytes); err != nil {
		return core.Layer[State]{}, err
	}
	l := &loader{root: abs, text: opts.Text, sources: opts.Files, files: files, max: opts.MaxFileBytes}
	l.fingerprint = l.fingerprintOf()
	return core.Layer[State]{
		ID: opts.ID, Name: "Instructions", Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget,
		Placement: core.PlacementAnchor, OnInitError: opts.OnInitError, Timeouts: opts.Timeouts,
		Hooks: core.Hooks[State]{
			Init: l.init,
			Recall: func(_ context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
				return core.Recall[State]{Items: Render(p.State.Blocks)}, nil
			},
		},
	}, nil
}

// loader reads the configured sources. It is immutable after New, so one
// layer serves concurrent sessions.
type loader struct {
	root        string
	text        string
	sources     []string // as given, for the source attribute
	files       []string // cleaned, OS separators
	max         int64
	fingerprint string
}

func (l *loader) fingerprintOf() string {
	doc, _ := json.Marshal(struct {
		Root  string   `json:"root"`
		Text  string   `json:"text"`
		Files []string `json:"files"`
		Max   int64    `json:"max"`
	}{l.root, l.text, l.files, l.max})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

func (l *loader) init(ctx context.Context, p core.InitParams) (State, error) {
	if len(p.Stored) > 0 {
		var st State
		if err := json.Unmarshal(p.Stored, &st); err == nil && st.Fingerprint == l.fingerprint {
			return st, nil
		}
		// Another configuration's copy, or an unreadable one: load afresh.
	}
	st, err := l.load(ctx)
	if err != nil {
		return State{}, err
	}
	if len(l.files) > 0 {
		// Durable scopes keep this copy for the scope's later runs; for
		// execution scope Storage saves nothing.
		if err := p.Storage.Save(ctx, "state", st); err != nil {
			if !errors.Is(err, storage.ErrConflict) {
				return State{}, fmt.Errorf("instructions: save loaded copy: %w", err)
			}
			// A concurrent first run of the scope saved its copy first:
			// use that one, so the scope's runs agree.
			var saved State
			if found, lerr := p.Storage.Load(ctx, "state", &saved); lerr == nil && found && saved.Fingerprint == l.fingerprint {
				return saved, nil
			}
		}
	}
	return st, nil
}

// load reads Text and every file.
func (l *loader) load(ctx context.Context) (State, error) {
	st := State{Fingerprint: l.fingerprint}
	if l.text != "" {
		st.Blocks = append(st.Blocks, Block{Text: l.text})
	}
	if len(l.files) == 0 {
		return st, nil
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return State{}, fmt.Errorf("instructions: open root %q: %w", l.root, err)
	}
	defer root.Close()
	for i, name := range l.files {
		if err := ctx.Err(); err != nil {
			return State{}, err
		}
		text, err := readText(root, l.root, name, l.max)
		if err != nil {
			return State{}, fmt.Errorf("instructions: load %q (root %q): %w", l.sources[i], l.root, err)
		}
		st.Blocks = append(st.Blocks, Block{Source: filepath.ToSlash(name), Text: text})
	}
	return st, nil
}

// readText reads the text file name under root (whose path is rootPath,
// for telling a link out of it), refusing special files, files over limit
// bytes and anything but UTF-8 text. It is shared by the load-once layer
// and discovery, so both hold files to the same rules.
func readText(root *os.Root, rootPath, name string, limit int64) (string, error) {
	// Refuse special files before opening them: opening a FIFO blocks
	// until a writer comes, which hung init until its timeout and left the
	// hook's goroutine stuck. The open itself does not block either
	// (openFlags), should a FIFO be swapped in after the stat.
	info, err := root.Stat(name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && fsutil.Escapes(rootPath, name) {
			return "", fmt.Errorf("%w: %v", ErrOutsideRoot, err)
		}
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrNotText, info.Mode().Type())
	}
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && fsutil.Escapes(rootPath, name) {
			return "", fmt.Errorf("%w: %v", ErrOutsideRoot, err)
		}
		return "", err
	}
	defer f.Close()
	info, err = f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrNotText, info.Mode().Type())
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(raw)) > limit {
		return "", fmt.Errorf("%w: over %d bytes", ErrFileTooLarge, limit)
	}
	if !utf8.Valid(raw) || strings.IndexByte(string(raw), 0) >= 0 {
		return "", fmt.Errorf("%w: not UTF-8 text", ErrNotText)
	}
	return strings.TrimRight(string(raw), "\r\n"), nil
}

// Render returns the developer messages of blocks, one per block, in
// order. It is what the layer's recall returns.
func Render(blocks []Block) []core.Item {
	items := make([]core.Item, 0, len(blocks))
	for _, b := range blocks {
		var s strings.Builder
		if b.Source == "" {
			s.WriteString("<instructions>\n")
		} else {
			s.WriteString(`<instructions source="`)
			s.WriteString(attrEscaper.Replace(b.Source))
			s.WriteString("\">\n")
		}
		s.WriteString(b.Text)
		s.WriteString("\n</instructions>")
		items = append(items, core.DeveloperMessage(s.String()))
	}
	return items
}

var attrEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;")
