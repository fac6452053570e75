// Package layerkit holds what the memory layers share to build a layer:
// option defaults and their *core.ConfigError values, the record scope of
// a run, deterministic record ids, and the checks around a provided
// function.
package layerkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/vectorstore"
)

// ConfigError returns the *core.ConfigError for a bad option of a layer.
func ConfigError(layer, field, reason string) error {
	return &core.ConfigError{Code: core.CodeInvalidLayer, Layer: layer, Field: field, Reason: reason}
}

// Defaults say how a layer resolves its memory.Common options: what each
// zero field means for it.
type Defaults struct {
	ID   string
	Name string
	Slot core.Slot
	// Budget replaces a zero Budget; its zero value keeps auto.
	Budget core.Budget
	// Scopes are the scopes the layer accepts, its default first.
	Scopes []core.Scope
	// Placement replaces an empty Placement; its zero value is
	// core.PlacementAuto.
	Placement core.Placement
	// CheckID, when set, vets the (defaulted) id; NoSlash and RecordSafe
	// are the layers' rules.
	CheckID func(id string) error
}

// Open is how a layer's New starts: store must be usable, else the error
// (wrapping memory.ErrInvalidStore) starts with name; then c is resolved
// from d (Resolve).
func Open(store *memory.Store, name string, c memory.Common, d Defaults) (memory.Common, error) {
	if err := store.Validate(); err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	return Resolve(c, d)
}

// Resolve returns c with its zero fields set from d, checked in the order
// ID, Scope, Budget, Placement. memory.PlacementAuto becomes
// core.PlacementAuto; a nil Logger one that discards (the scope notice,
// which NewScopeNotice builds from the given options, is the one warning
// that goes to slog.Default() instead: see memory.Common.Logger). Errors
// are *core.ConfigError values naming the layer and the field.
func Resolve(c memory.Common, d Defaults) (memory.Common, error) {
	if c.ID == "" {
		c.ID = d.ID
	}
	if d.CheckID != nil {
		if err := d.CheckID(c.ID); err != nil {
			return c, err
		}
	}
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.Scope == "" {
		c.Scope = d.Scopes[0]
	}
	if !slices.Contains(d.Scopes, c.Scope) {
		names := make([]string, len(d.Scopes))
		for i, s := range d.Scopes {
			names[i] = string(s)
		}
		want := names[0]
		if n := len(names); n > 1 {
			want = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
		}
		return c, ConfigError(c.ID, "Scope", fmt.Sprintf("%q: want %s", c.Scope, want))
	}
	if c.Slot == 0 {
		c.Slot = d.Slot
	}
	if c.Budget == (core.Budget{}) {
		c.Budget = d.Budget
	}
	if err := c.Budget.Validate(); err != nil {
		var ce *core.ConfigError
		if errors.As(err, &ce) {
			ce.Layer = c.ID
		}
		return c, err
	}
	switch c.Placement {
	case "":
		c.Placement = d.Placement
	case memory.PlacementAuto:
		c.Placement = core.PlacementAuto
	case core.PlacementAnchor, core.PlacementLive:
	default:
		return c, ConfigError(c.ID, "Placement", fmt.Sprintf("unknown placement %q", c.Placement))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Spec returns the core layer with the resolved common options set: the
// fields every memory layer fills alike.
func Spec[S any](c memory.Common) core.Layer[S] {
	return core.Layer[S]{
		ID: c.ID, Name: c.Name, Slot: c.Slot, Scope: c.Scope, Budget: c.Budget,
		Placement: c.Placement, Timeouts: c.Timeouts, OnInitError: c.OnInitError,
	}
}

// NoSlash refuses an id with a '/', which would make the names of the
// layer's functions ("<id>/<name>") ambiguous.
func NoSlash(id string) error {
	if strings.Contains(id, "/") {
		return ConfigError(id, "ID", "must not contain '/'")
	}
	return nil
}

// RecordSafe refuses an id that cannot also name the layer's records:
// one with a '/', invalid UTF-8 or over vectorstore.MaxFieldBytes bytes.
func RecordSafe(id string) error {
	if strings.Contains(id, "/") || len(id) > vectorstore.MaxFieldBytes || !utf8.ValidString(id) {
		return ConfigError(id, "ID", "must be valid UTF-8 without '/', at most 512 bytes")
	}
	return nil
}

// InitState is an Init hook's state: the scoped state the runtime
// persisted for the layer (none yet: the zero state), completed by load
// (which loads the layer's mirror into it).
func InitState[S any](stored []byte, load func(*S) error) (S, error) {
	var st, zero S
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &st); err != nil {
			return zero, fmt.Errorf("decode stored state: %w", err)
		}
	}
	if err := load(&st); err != nil {
		return zero, err
	}
	return st, nil
}

// Scoped is the record scope of a run for a layer whose scope is thread,
// resource or global, with the key that scope contributes to record ids
// and the filter that selects the layer's records of one kind in it. A
// thread-scoped record names its resource too, and a thread of a resource
// is keyed and selected by both (isolation by construction): two resources that
// name a thread alike never share a record, even where no binding of the
// thread is shared.
func Scoped(layer, kind string, scope core.Scope, run core.RunInfo) (vectorstore.Scope, string, vectorstore.Filter) {
	f := vectorstore.Filter{Layer: layer, Kind: kind, Metadata: map[string]string{memory.MetaScope: string(scope)}}
	switch scope {
	case core.ScopeThread:
		f.Thread, f.Resource = run.ThreadID, run.ResourceID
		s := vectorstore.Scope{Thread: run.ThreadID, Resource: run.ResourceID}
		return s, memory.ScopeKey(string(scope), s), f
	case core.ScopeResource:
		f.Resource = run.ResourceID
		s := vectorstore.Scope{Resource: run.ResourceID}
		return s, memory.ScopeKey(string(scope), s), f
	}
	return vectorstore.Scope{}, memory.ScopeKey(string(scope), vectorstore.Scope{}), f
}

// RecordID is the deterministic id of the record of kind with this natural
// key, in a layer's scope (a Scoped key), so writing it again replaces it:
// kind, "-", and 20 bytes of SHA-256 over layer, scope key and key.
func RecordID(kind, layer, scopeKey, key string) string {
	h := sha256.Sum256([]byte(layer + "\x00" + scopeKey + "\x00" + key))
	return kind + "-" + hex.EncodeToString(h[:20])
}

// ThreadOrResource is the record scope of a run for a layer scoped to the
// thread or the resource. A thread's records name its resource too.
func ThreadOrResource(scope core.Scope, run core.RunInfo) vectorstore.Scope {
	if scope == core.ScopeResource {
		return vectorstore.Scope{Resource: run.ResourceID}
	}
	return vectorstore.Scope{Thread: run.ThreadID, Resource: run.ResourceID}
}

// CheckScope normalises a scope given to a layer's Go API to the part the
// layer's scope uses; naming none is an error wrapping sentinel. A thread
// scope keeps its resource: a thread of a resource is keyed by both.
func CheckScope(layer string, scope core.Scope, s vectorstore.Scope, sentinel error) (vectorstore.Scope, error) {
	switch scope {
	case core.ScopeGlobal:
		// One scope for every run: whatever s names is not part of it.
		return vectorstore.Scope{}, nil
	case core.ScopeResource:
		if s.Resource == "" {
			return s, fmt.Errorf("%w: layer %q is resource-scoped: Scope.Resource is empty", sentinel, layer)
		}
		return vectorstore.Scope{Resource: s.Resource}, nil
	}
	if s.Thread == "" {
		return s, fmt.Errorf("%w: layer %q is thread-scoped: Scope.Thread is empty", sentinel, layer)
	}
	return vectorstore.Scope{Thread: s.Thread, Resource: s.Resource}, nil
}

// AdoptThreadRecords gives the run's resource the layer's records of the
// run's thread that name no resource: what an earlier version wrote for a
// thread before threads were keyed by resource. Layers call it from Init
// when InitParams.ClaimedThread says the run has just bound the thread,
// so it runs once per thread. It returns how many records it adopted.
func AdoptThreadRecords(ctx context.Context, col *vectorstore.Collection, layer string, run core.RunInfo) (int, error) {
	if run.ThreadID == "" || run.ResourceID == "" {
		return 0, nil
	}
	var adopt []vectorstore.Record
	for r, err := range col.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: layer, Thread: run.ThreadID}, Limit: 1000, WithVectors: true}) {
		if err != nil {
			return 0, fmt.Errorf("adopt the thread's records: %w", err)
		}
		if r.Scope.Resource == "" {
			r.Scope.Resource = run.ResourceID
			adopt = append(adopt, r)
		}
	}
	for lo := 0; lo < len(adopt); lo += 500 {
		if err := col.Upsert(ctx, adopt[lo:min(len(adopt), lo+500)]...); err != nil {
			return lo, fmt.Errorf("adopt the thread's records: %w", err)
		}
	}
	return len(adopt), nil
}

// MirrorInit is the Init hook of a layer whose state is a mirror of its
// scope's records (episodic, entity, scratchpad): it checks the layer's
// scope notice (nil: none), gives the run's resource the thread's records
// of an earlier version when the run has just bound the thread
// (AdoptThreadRecords), then loads the run's scope. name starts its
// errors.
func MirrorInit[S any](store *memory.Store, notice *ScopeNotice, layer, name string, load func(context.Context, core.RunInfo) (S, error)) func(context.Context, core.InitParams) (S, error) {
	return func(ctx context.Context, p core.InitParams) (S, error) {
		notice.Check(ctx, p)
		if p.ClaimedThread {
			if _, err := AdoptThreadRecords(ctx, store.Records, layer, p.Run); err != nil {
				var zero S
				return zero, fmt.Errorf("%s: %w", name, err)
			}
		}
		return load(ctx, p.Run)
	}
}

// MirrorHooks are the hooks of a layer whose state is a mirror of its
// scope's records and whose writes are its routed calls (entity,
// scratchpad): Init is MirrorInit, with the layer's scope notice; Recall
// is render's text of the state within the budget; RenderDelta is delta's
// text, no compact delta when it is ""; OnReturn loads the parent's scope
// again, since a child writes to the store directly, and keep carries
// over what the reloaded state takes from the parent's.
func MirrorHooks[S any](store *memory.Store, notice *ScopeNotice, layer, name string,
	load func(context.Context, core.RunInfo) (S, error),
	render func(st S, budget int, tk tokens.Tokenizer) string,
	delta func(st S, prev, next []core.Item) string,
	keep func(reloaded *S, parent S)) core.Hooks[S] {
	return core.Hooks[S]{
		Init: MirrorInit(store, notice, layer, name, load),
		Recall: func(_ context.Context, p core.RecallParams[S]) (core.Recall[S], error) {
			return core.Text[S](render(p.State, p.Budget, p.Tokens))
		},
		RenderDelta: func(_ context.Context, p core.RenderDeltaParams[S]) (string, bool, error) {
			d := delta(p.State, p.Prev, p.Next)
			return d, d != "", nil
		},
		OnReturn: func(ctx context.Context, p core.ChildParams[S]) (*S, error) {
			st, err := load(ctx, p.Parent)
			if err != nil {
				return nil, err
			}
			keep(&st, p.State)
			return &st, nil
		},
	}
}

// UpdateFunction is the provided function "update" of a layer whose
// routed calls apply applies (entity, scratchpad): apply returns the next
// state (nil: unchanged) and the output for the model.
func UpdateFunction[S any](description string, parameters []byte, apply func(context.Context, core.RunInfo, S, core.Item) (*S, string, error)) core.Function[S] {
	return core.Function[S]{
		Spec: core.ToolSpec{Name: "update", Description: description, Parameters: parameters},
		Call: func(ctx context.Context, p core.CallParams[S]) (core.FunctionResult[S], error) {
			next, out, err := apply(ctx, p.Run, p.State, p.Call)
			return core.FunctionResult[S]{Output: out, State: next}, err
		},
	}
}

// KeepMine is the Merge of a layer whose scoped state is empty (the
// records are the memory): a concurrent run's write never carries
// anything to merge.
func KeepMine[S any](_, mine S) S { return mine }

// SourceID names the item at log index idx: its own id, else
// "<runID>:<idx>".
func SourceID(run core.RunInfo, it core.Item, idx int) string {
	if it.ID != "" {
		return it.ID
	}
	return run.RunID + ":" + strconv.Itoa(idx)
}

// CallSourceID names a routed function call: its item id, else
// "<runID>:call:<callID>".
func CallSourceID(run core.RunInfo, call core.Item) string {
	if call.ID != "" {
		return call.ID
	}
	return run.RunID + ":call:" + call.CallID
}

// Foreign returns the items an extractor may read, with their positions in
// items: all but calls of the layer's own functions (names, in full) and
// their outputs. A routed call writes its own memories, and a denied one
// must not be written at all.
func Foreign(items []core.Item, names ...string) ([]core.Item, []int) {
	var out []core.Item
	var idx []int
	own := map[string]bool{}
	for i, it := range items {
		switch {
		case it.Type == core.TypeFunctionCall && slices.Contains(names, it.Name):
			own[it.CallID] = true
			continue
		case it.Type == core.TypeFunctionCallOutput && own[it.CallID]:
			continue
		}
		out = append(out, it)
		idx = append(idx, i)
	}
	return out, idx
}

// Function returns a provided function whose arguments must be at most
// maxBytes long and match the JSON schema of A (checked, with
// core.NewFunction's words, before call runs, so a rejected call leaves
// state unchanged). fullName, "<layer>/<name>", names it in the size error.
func Function[S, A any](name, fullName, description string, maxBytes int, call func(context.Context, core.CallParams[S]) (core.FunctionResult[S], error)) core.Function[S] {
	f := core.NewFunction[S, A](name, description, func(context.Context, S, A) (string, *S, error) { return "", nil, nil })
	validate := f.Call
	f.Call = func(ctx context.Context, p core.CallParams[S]) (core.FunctionResult[S], error) {
		if len(p.Call.Arguments) > maxBytes {
			return core.FunctionResult[S]{}, &core.ArgumentError{Function: fullName,
				Err: fmt.Errorf("arguments are %d bytes, more than the %d allowed", len(p.Call.Arguments), maxBytes)}
		}
		// Schema check first (types, required fields), for its precise words.
		if _, err := validate(ctx, p); err != nil {
			return core.FunctionResult[S]{}, err
		}
		if err := CheckArguments(p.Call.Arguments); err != nil {
			return core.FunctionResult[S]{}, &core.ArgumentError{Function: fullName, Err: err}
		}
		return call(ctx, p)
	}
	return f
}

// Records reads every record matching f, with their vectors when asked.
func Records(ctx context.Context, col *vectorstore.Collection, f vectorstore.Filter, withVectors bool) ([]vectorstore.Record, error) {
	var out []vectorstore.Record
	for r, err := range col.All(ctx, vectorstore.ListOptions{Filter: f, Limit: 1000, WithVectors: withVectors}) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Mirror is a session's in-memory copy of its scope's memories, by record
// id: loaded at init, kept in step on every write, rendered from. Hooks of
// one session may overlap (one outliving its timeout) and a spawned child
// shares its parent's mirror, hence the lock. The zero value is empty.
type Mirror[T any] struct {
	mu   sync.Mutex
	byID map[string]T
}

// Put adds or replaces the memory with this id.
func (m *Mirror[T]) Put(id string, v T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = map[string]T{}
	}
	m.byID[id] = v
}

// Values returns a copy of the memories, in no particular order.
func (m *Mirror[T]) Values() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]T, 0, len(m.byID))
	for _, v := range m.byID {
		out = append(out, v)
	}
	return out
}

// CheckText is the memory layers' one rule for text a model or a caller
// gives them: valid UTF-8 with no control character but newline and tab.
// ESC, BEL and the other C0 and C1 controls mean nothing in a memory, and
// a tool that prints the record (memctl, a log viewer) would let them
// drive the operator's terminal. Its error is worded for the model.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if r == 0 {
			return errors.New("contains a NUL byte (U+0000), a control character: write plain text")
		}
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return fmt.Errorf("contains the control character %U: write plain text", r)
		}
	}
	return nil
}

// StripControls is CheckText's rule for text the layers extract from the
// conversation themselves: the controls it refuses are removed (invalid
// UTF-8 is replaced), since refusing would lose what the user said.
func StripControls(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// CheckArguments applies CheckText to every string of a function call's
// JSON arguments, object keys included, and names the first offending
// path ("facts[0].value"). Arguments that are not JSON are left to the
// caller's decoder.
func CheckArguments(raw string) error {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil
	}
	return checkValue("", v)
}

func checkValue(path string, v any) error {
	switch x := v.(type) {
	case string:
		if err := CheckText(x); err != nil {
			if path == "" {
				path = "arguments"
			}
			return fmt.Errorf("%s: %w", path, err)
		}
	case []any:
		for i, e := range x {
			if err := checkValue(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if err := CheckText(k); err != nil {
				return fmt.Errorf("%s (a key): %w", p, err)
			}
			if err := checkValue(p, x[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteIf writes recs one by one, each against the revision it carries:
// a record read from the store carries the revision it was read at, a new
// one 0 (it must not exist yet). A record another session wrote since it
// was read fails the write with an error matching vectorstore.ErrConflict,
// and the records after it are not written; the caller reads again and
// re-applies its change (RetryConflicts).
func WriteIf(ctx context.Context, col *vectorstore.Collection, recs []vectorstore.Record) error {
	for _, r := range recs {
		if _, err := col.UpsertIf(ctx, r, r.Revision); err != nil {
			return err
		}
	}
	return nil
}

// MaxConflictAttempts bounds RetryConflicts.
const MaxConflictAttempts = 20

// RetryConflicts runs a read-modify-write apply until it does not
// conflict with another writer (an error matching
// vectorstore.ErrConflict), at most MaxConflictAttempts times, backing
// off a little longer each time so two contenders do not collide again at
// once. The last conflict is returned as a *core.WriteError: the change
// was not stored.
func RetryConflicts[R any](ctx context.Context, layer, item string, apply func() (R, error)) (R, error) {
	for attempt := 1; ; attempt++ {
		r, err := apply()
		switch {
		case err == nil || !errors.Is(err, vectorstore.ErrConflict):
			return r, err
		case attempt == MaxConflictAttempts:
			return r, &core.WriteError{Layer: layer, Item: item + " (other sessions kept changing them)", Err: err}
		}
		select {
		case <-ctx.Done():
			return r, &core.WriteError{Layer: layer, Item: item, Err: ctx.Err()}
		case <-time.After(time.Duration(attempt*attempt) * time.Millisecond):
		}
	}
}

// RunOf is the run a Go API call of a layer acts as: the scope's thread
// and resource, so the call resolves record scopes, ids and filters
// through the same functions as the layer's hooks.
func RunOf(s vectorstore.Scope) core.RunInfo {
	return core.RunInfo{ThreadID: s.Thread, ResourceID: s.Resource}
}

// Run checks a scope s given to the Go API of layer (with the layer
// scope scope) and returns the run whose records it names (RunOf the
// normalised scope); a scope naming none is an error wrapping
// memory.ErrScope.
func Run(layer string, scope core.Scope, s vectorstore.Scope) (core.RunInfo, error) {
	sc, err := CheckScope(layer, scope, s, memory.ErrScope)
	if err != nil {
		return core.RunInfo{}, err
	}
	return RunOf(sc), nil
}

// Load is a Go API call's read of the scope s of layer: load (the layer's
// init read) of the run Run returns.
func Load[S any](ctx context.Context, layer string, scope core.Scope, s vectorstore.Scope, load func(context.Context, core.RunInfo) (S, error)) (S, error) {
	run, err := Run(layer, scope, s)
	if err != nil {
		var zero S
		return zero, err
	}
	return load(ctx, run)
}

// Delete deletes the records with these ids that f selects (a layer's
// records of one scope): an id of another layer or scope, or one not
// stored, is skipped. It returns how many records it deleted.
func Delete(ctx context.Context, col *vectorstore.Collection, f vectorstore.Filter, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n := 0
	for lo := 0; lo < len(ids); lo += 500 {
		f.IDs = ids[lo:min(len(ids), lo+500)]
		k, err := col.DeleteWhere(ctx, f)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ScopeNotice tells the host, once per layer, that the layer's default
// thread scope will not do what the run evidently wants: the run names a
// resource (a user) and starts a new thread of it, so the host expects
// the user's memories there, but a thread-scoped layer shows only what it
// kept on this thread, which is nothing yet. It is the commonest surprise
// of zero-value options (a second visit that recalls nothing), and it
// fails silently otherwise. Only a scope left at its default is noticed:
// a host that sets core.ScopeThread has chosen it.
type ScopeNotice struct {
	layer  string
	logger *slog.Logger
	once   sync.Once
}

// NewScopeNotice returns the notice of a layer built from the options the
// host gave (given) and their resolved form (Resolve's result), or nil
// when there is nothing to notice: the host named a scope, or the
// layer's default is not core.ScopeThread. The notice goes to the
// layer's Logger; when the host gave none it goes to slog.Default(), since
// the host that configured nothing is the one this is for (the rule
// memory.Common.Logger documents).
func NewScopeNotice(given, resolved memory.Common) *ScopeNotice {
	if given.Scope != "" || resolved.Scope != core.ScopeThread {
		return nil
	}
	l := given.Logger
	if l == nil {
		l = slog.Default()
	}
	return &ScopeNotice{layer: resolved.ID, logger: l}
}

// Check logs the notice the first time it applies to a run: a top-level
// run with a resource that has just bound a new thread
// (InitParams.ClaimedThread). A nil notice does nothing.
func (n *ScopeNotice) Check(ctx context.Context, p core.InitParams) {
	if n == nil || p.Run.ResourceID == "" || !p.ClaimedThread || p.Run.ParentRunID != "" {
		return
	}
	n.once.Do(func() {
		n.logger.WarnContext(ctx, "memory layer keeps its memories per thread: this new thread of the resource starts without them",
			"layer", n.layer, "resource", p.Run.ResourceID, "thread", p.Run.ThreadID,
			"fix", "set Scope: core.ScopeResource in the layer's memory.Common options to share them across the resource's threads, or Scope: core.ScopeThread to keep them per thread and silence this")
	})
}

// WithScopeNotice is init with the notice checked first: the Init hook
// of a layer with its own, e.g. WithScopeNotice(n, l.init) (MirrorInit
// and the ledger's Init check theirs). A nil notice returns init
// unchanged.
func WithScopeNotice[S any](n *ScopeNotice, init func(context.Context, core.InitParams) (S, error)) func(context.Context, core.InitParams) (S, error) {
	if n == nil {
		return init
	}
	return func(ctx context.Context, p core.InitParams) (S, error) {
		n.Check(ctx, p)
		return init(ctx, p)
	}
}
