package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/cmd/memctl/internal/layerrules"
	"github.com/stratamem/strata/cmd/memctl/internal/progress"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

type addFlags struct {
	layer, layerType, kind, thread, resource, scope, text string
	meta                                                  []string
	validFrom, validTo                                    string
	// per layer
	name, typ, key, subject, predicate, value, when, role, run, outcome string
	priority, importance                                                int
	sources                                                             []string
}

const addLong = `Add a memory through the same path as its layer, so the layer reads it back:

  observations  written with the layer's own Add (near-duplicates merge):
                memctl add -l observations -t t1 --importance 4 "User is vegetarian"
  temporal      written with the layer's own Record (an earlier value of the
                same subject and predicate is closed at the new one's start):
                memctl add -l temporal -r alice --subject user --predicate "lives in" --value Berlin --when 2026-03-01
  entity        applied as the layer's entity/update call (notes merge):
                memctl add -l entity -t t1 --name "Ada Lovelace" --type person "mathematician"
  scratchpad    applied as the layer's scratchpad/update call:
                memctl add -l scratchpad -t t1 --key plan "ship v2 on Friday"
  episodic      an episode record in the layer's shape (one per --run):
                memctl add -l episodic -r alice --scope resource --run r42 "Helped plan the trip"
  semantic      a message record in the layer's shape (a resource-scoped
                layer's messages belong to a thread of the resource):
                memctl add -l semantic -t t1 --role user "I moved to Berlin"
                memctl add -l semantic -t t1 -r alice --scope resource "I moved to Berlin"

TEXT is an argument, --text, or - for stdin. The scope is --scope, else thread
when --thread is given, else resource when --resource is given, else global.
A thread that belongs to a resource is named by both: -t T -r R writes a
thread-scoped memory carrying both ids, as the runtime writes them.
Every record is checked against its layer's rules: a kind the layer reads,
a scope it can be configured with, the metadata it needs, a text of at most
8 KiB of UTF-8. It is embedded with the store's embedder and written; the
ids written are printed. A custom layer id takes the rules of --layer-type.`

func (a *app) addCmd() *cobra.Command {
	var f addFlags
	cmd := &cobra.Command{
		Use:   "add [TEXT|-]",
		Short: "Add a memory, validated as its layer validates it",
		Long:  addLong,
		Args:  rangeArgs(0, 1, "at most one TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("text") {
					return usageErrorf("give the text as an argument or with --text, not both")
				}
				f.text = args[0]
			}
			return a.runAdd(cmd.Context(), cmd, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.layer, "layer", "l", "", "the layer (required): "+strings.Join(layerrules.Types, ", "))
	fs.StringVar(&f.layerType, "layer-type", "", "the rules of a custom layer id: one of "+strings.Join(layerrules.Types, ", "))
	fs.StringVarP(&f.kind, "kind", "k", "", "record kind (default: the layer's)")
	fs.StringVarP(&f.thread, "thread", "t", "", "thread id")
	fs.StringVarP(&f.resource, "resource", "r", "", "resource id")
	fs.StringVar(&f.scope, "scope", "", "the layer's scope: thread, resource or global (default from --thread/--resource)")
	fs.StringVar(&f.text, "text", "", "the text (or - for stdin)")
	fs.StringArrayVar(&f.meta, "meta", nil, "extra metadata KEY=VALUE (episodic, semantic; repeatable)")
	fs.StringVar(&f.validFrom, "valid-from", "", "start of validity (episodic, semantic)")
	fs.StringVar(&f.validTo, "valid-to", "", "end of validity (episodic, semantic)")
	fs.StringVar(&f.name, "name", "", "entity: name")
	fs.StringVar(&f.typ, "type", "", "entity: person, organization, place, concept or other")
	fs.IntVar(&f.priority, "priority", 0, "entity: priority 0..10")
	fs.StringVar(&f.key, "key", "", "scratchpad: key")
	fs.StringVar(&f.subject, "subject", "", "temporal: subject")
	fs.StringVar(&f.predicate, "predicate", "", "temporal: predicate")
	fs.StringVar(&f.value, "value", "", "temporal: value (the text is derived)")
	fs.StringVar(&f.when, "when", "", "temporal: when it became true (2026-03-01, yesterday, ...)")
	fs.IntVar(&f.importance, "importance", 0, "observations: importance 1..5 (default 3)")
	fs.StringArrayVar(&f.sources, "source", nil, "observations: source item id (repeatable)")
	fs.StringVar(&f.role, "role", "user", "semantic: user or assistant")
	fs.StringVar(&f.run, "run", "", "episodic: the run the episode summarises (default: a new id)")
	fs.StringVar(&f.outcome, "outcome", "", "episodic: the run's outcome")
	_ = cmd.RegisterFlagCompletionFunc("layer", completeLayers)
	_ = cmd.RegisterFlagCompletionFunc("layer-type", completeLayers)
	_ = cmd.RegisterFlagCompletionFunc("kind", completeKinds)
	_ = cmd.RegisterFlagCompletionFunc("scope", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"thread", "resource", "global"}, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("type", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"person", "organization", "place", "concept", "other"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// written is what add and edit report per record.
type written struct {
	ID     string `json:"id"`
	Layer  string `json:"layer"`
	Kind   string `json:"kind"`
	Action string `json:"action"` // added, merged, unchanged, updated, closed, corrected
	Text   string `json:"text"`
}

func (a *app) readText(s string) (string, error) {
	if s != "-" {
		return s, nil
	}
	b, err := io.ReadAll(io.LimitReader(a.io.In, layerrules.MaxTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

func (a *app) runAdd(ctx context.Context, cmd *cobra.Command, f *addFlags) error {
	if f.layer == "" {
		return usageErrorf("--layer is required (one of %s)", strings.Join(layerrules.Types, ", "))
	}
	typ := f.layerType
	if typ == "" {
		typ = f.layer
	}
	rule, ok := layerrules.Lookup(typ)
	if !ok {
		if f.layerType != "" {
			return usageErrorf("--layer-type %q: want one of %s", typ, strings.Join(layerrules.Types, ", "))
		}
		return usageErrorf("unknown layer %q: want one of %s (or give a custom layer's --layer-type)", f.layer, strings.Join(layerrules.Types, ", "))
	}
	if strings.Contains(f.layer, "/") {
		return usageErrorf("--layer %q: a layer id has no '/'", f.layer)
	}
	text, err := a.readText(f.text)
	if err != nil {
		return err
	}
	f.text = text
	// Flags that belong to other layers are mistakes, not no-ops.
	own := map[string][]string{
		layerrules.Entity:       {"name", "type", "priority"},
		layerrules.Scratchpad:   {"key"},
		layerrules.Temporal:     {"subject", "predicate", "value", "when"},
		layerrules.Observations: {"importance", "source"},
		layerrules.Semantic:     {"role", "meta", "valid-from", "valid-to"},
		layerrules.Episodic:     {"run", "outcome", "meta", "valid-from", "valid-to"},
	}
	for t, names := range own {
		if t == typ {
			continue
		}
		for _, n := range names {
			if cmd.Flags().Changed(n) && !contains(own[typ], n) {
				return usageErrorf("--%s does not apply to layer %s", n, typ)
			}
		}
	}
	if typ == layerrules.Semantic && f.kind == "context" {
		return usageErrorf("context records are derived by the semantic layer from the messages around them: add the message")
	}
	if f.kind != "" && !contains(rule.Kinds, f.kind) {
		return usageErrorf("--kind %q: layer %s writes %s", f.kind, typ, strings.Join(rule.Kinds, " or "))
	}
	scope := f.scope
	if scope == "" {
		switch {
		case f.thread != "":
			scope = layerrules.ScopeThread
		case f.resource != "":
			scope = layerrules.ScopeResource
		default:
			scope = layerrules.ScopeGlobal
		}
	}
	if !contains(rule.Scopes, scope) {
		if f.scope == "" {
			// The scope was inferred: say what to give.
			return usageErrorf("layer %s cannot be %s-scoped: give --thread (for a thread-scoped layer) or --resource (resource-scoped)", typ, scope)
		}
		return usageErrorf("--scope %s: layer %s can be %s-scoped only", scope, typ, strings.Join(rule.Scopes, " or "))
	}
	sc := vectorstore.Scope{Thread: f.thread, Resource: f.resource}
	switch scope {
	case layerrules.ScopeThread:
		if f.thread == "" {
			return usageErrorf("scope thread needs --thread")
		}
	case layerrules.ScopeResource:
		switch {
		case f.resource == "" && typ == layerrules.Semantic:
			return usageErrorf("a resource-scoped semantic layer keeps each message in a thread of the resource: give --resource and --thread")
		case f.resource == "":
			return usageErrorf("scope resource needs --resource")
		case typ == layerrules.Semantic && f.thread == "":
			return usageErrorf("a resource-scoped semantic layer keeps each message in a thread of the resource: give --thread too")
		case f.thread != "" && typ != layerrules.Semantic:
			return usageErrorf("a resource-scoped memory has no thread: drop --thread or use --scope thread")
		}
	case layerrules.ScopeGlobal:
		if f.thread != "" || f.resource != "" {
			return usageErrorf("a global memory has no thread or resource")
		}
	}
	if typ != layerrules.Temporal && strings.TrimSpace(f.text) == "" {
		return usageErrorf("no text: give it as an argument, with --text, or - for stdin")
	}
	if len(f.text) > layerrules.MaxTextBytes {
		return usageErrorf("text is %d bytes, at most %d", len(f.text), layerrules.MaxTextBytes)
	}
	md := map[string]string{}
	for _, kv := range f.meta {
		k, v, err := parseKV(kv)
		if err != nil {
			return err
		}
		md[k] = v
	}
	now := a.now().UTC()
	validFrom, err := parseTimeFlag("--valid-from", f.validFrom, now)
	if err != nil {
		return err
	}
	validTo, err := parseTimeFlag("--valid-to", f.validTo, now)
	if err != nil {
		return err
	}

	s, err := a.openStore(ctx, openCreate, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	ms, err := s.memoryStore(ctx)
	if err != nil {
		return err
	}
	var out []written
	switch typ {
	case layerrules.Observations:
		out, err = addObservation(ctx, ms, f, scope, sc)
	case layerrules.Temporal:
		out, err = addFact(ctx, ms, f, scope, sc)
	case layerrules.Entity, layerrules.Scratchpad:
		out, err = addByCall(ctx, ms, typ, f, scope, sc)
	default:
		r := vectorstore.Record{Layer: f.layer, Kind: f.kind, Scope: sc, Text: f.text, Metadata: md, ValidFrom: validFrom, ValidTo: validTo}
		if scope == layerrules.ScopeResource && typ != layerrules.Semantic {
			r.Scope.Thread = ""
		}
		if scope == layerrules.ScopeGlobal {
			r.Scope = vectorstore.Scope{}
		}
		out, err = addRecord(ctx, ms, typ, f, scope, &r, now)
	}
	if err != nil {
		return err
	}
	return a.printWritten(out)
}

func (a *app) printWritten(out []written) error {
	if a.flags.json {
		for _, w := range out {
			if err := writeJSON(a.io.Out, w); err != nil {
				return err
			}
		}
		return nil
	}
	tw := newTable(a.io.Out)
	fmt.Fprintln(tw, "ID\tLAYER\tKIND\tACTION\tTEXT")
	for _, w := range out {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(w.ID), cell(w.Layer), cell(w.Kind), w.Action, cell(clip(w.Text, 60)))
	}
	return tw.Flush()
}

// layerInputError turns a layer's rejection of memctl's input into a
// usage error.
func layerInputError(err error, sentinels ...error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return usageErrorf("%v", err)
		}
	}
	var ce *core.ConfigError
	if errors.As(err, &ce) {
		return usageErrorf("%v", err)
	}
	return err
}

func addObservation(ctx context.Context, ms *memory.Store, f *addFlags, scope string, sc vectorstore.Scope) ([]written, error) {
	l, err := observations.New(ms, observations.Options{ID: f.layer, Scope: core.Scope(scope), DisableExtraction: true})
	if err != nil {
		return nil, layerInputError(err)
	}
	res, err := l.Add(ctx, sc, observations.Observation{Text: f.text, Importance: f.importance, Sources: f.sources})
	if err != nil {
		return nil, layerInputError(err, observations.ErrInvalidObservation, observations.ErrScope)
	}
	action := "added"
	switch {
	case res.Merged > 0:
		action = "merged"
	case res.Unchanged > 0:
		action = "unchanged"
	}
	var out []written
	for _, id := range res.IDs {
		out = append(out, written{ID: id, Layer: f.layer, Kind: observations.Kind, Action: action, Text: f.text})
	}
	return out, nil
}

func addFact(ctx context.Context, ms *memory.Store, f *addFlags, scope string, sc vectorstore.Scope) ([]written, error) {
	if f.text != "" && f.value == "" {
		f.value = f.text
	} else if f.text != "" && f.text != f.value {
		return nil, usageErrorf("temporal: give the value with --value (the text is derived from subject, predicate and value)")
	}
	l, err := temporal.New(ms, temporal.Options{ID: f.layer, Scope: core.Scope(scope)})
	if err != nil {
		return nil, layerInputError(err)
	}
	res, err := l.Record(ctx, sc, time.Time{}, temporal.Input{Subject: f.subject, Predicate: f.predicate, Value: f.value, When: f.when})
	if err != nil {
		return nil, layerInputError(err, temporal.ErrInvalidFact, temporal.ErrScope)
	}
	var out []written
	action := "added"
	if res.Unchanged > 0 && res.Added == 0 {
		action = "unchanged"
	}
	for _, fa := range res.Facts {
		out = append(out, written{ID: fa.ID, Layer: f.layer, Kind: temporal.Kind, Action: action,
			Text: fa.Subject + " " + fa.Predicate + ": " + fa.Value})
	}
	for _, fa := range res.Superseded {
		act, kind := "closed", temporal.Kind
		if fa.Corrected() {
			act, kind = "corrected", temporal.KindCorrected
		}
		out = append(out, written{ID: fa.ID, Layer: f.layer, Kind: kind, Action: act, Text: fa.Subject + " " + fa.Predicate + ": " + fa.Value})
	}
	return out, nil
}

// addByCall applies the layer's own update function in a session of the
// scope: the exact validation and merging the model's calls get.
func addByCall(ctx context.Context, ms *memory.Store, typ string, f *addFlags, scope string, sc vectorstore.Scope) ([]written, error) {
	var (
		layer core.AnyLayer
		args  any
		err   error
		id    string
		kind  string
	)
	scopeKey := layerrules.ScopeKey(scope, sc)
	switch typ {
	case layerrules.Entity:
		if strings.TrimSpace(f.name) == "" || f.typ == "" {
			return nil, usageErrorf("entity: --name and --type are required")
		}
		layer, err = entity.New(ms, entity.Options{ID: f.layer, Scope: core.Scope(scope)})
		ent := map[string]any{"name": f.name, "type": f.typ, "notes": []string{f.text}}
		if f.priority != 0 {
			ent["priority"] = f.priority
		}
		args = map[string]any{"entities": []any{ent}}
		kind = entity.KindEntity
		if t, ok := entity.ParseType(f.typ); ok {
			h := sha256.Sum256([]byte(f.layer + "\x00" + scopeKey + "\x00" + string(t) + "\x00" + entity.NormalizeName(f.name)))
			id = kind + "-" + hex.EncodeToString(h[:20])
		}
	default:
		if strings.TrimSpace(f.key) == "" {
			return nil, usageErrorf("scratchpad: --key is required")
		}
		layer, err = newScratchpad(ms, f.layer, scope)
		key := strings.TrimSpace(f.key)
		args = map[string]any{"set": map[string]string{key: f.text}}
		kind = "note"
		h := sha256.Sum256([]byte(f.layer + "\x00" + scopeKey + "\x00" + key))
		id = kind + "-" + hex.EncodeToString(h[:20])
	}
	if err != nil {
		return nil, layerInputError(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	if err != nil {
		return nil, err
	}
	run := core.RunOptions{RunID: "memctl-" + randomHex(6)}
	switch scope {
	case layerrules.ScopeThread:
		run.ThreadID, run.ResourceID = sc.Thread, sc.Resource
	case layerrules.ScopeResource:
		run.ResourceID = sc.Resource
	}
	sess, err := rt.Start(ctx, run)
	if err != nil {
		return nil, err
	}
	defer sess.Close(ctx)
	existed := false
	if id != "" {
		_, gerr := ms.Records.Get(ctx, id)
		existed = gerr == nil
	}
	out, err := sess.CallFunction(ctx, core.FunctionCall("memctl-add", f.layer+"/update", string(raw)))
	if err != nil {
		return nil, err
	}
	if msg, bad := strings.CutPrefix(out.Output, "error: "); bad {
		return nil, usageErrorf("%s: %s", typ, msg)
	}
	w := written{ID: id, Layer: f.layer, Kind: kind, Action: "added", Text: f.text}
	if id != "" {
		if r, err := ms.Records.Get(ctx, id); err == nil {
			w.Text = r.Text
			if existed {
				w.Action = "updated"
			}
		} else {
			w.ID = "?"
		}
	}
	return []written{w}, nil
}

// addRecord writes an episodic or semantic record in its layer's shape.
func addRecord(ctx context.Context, ms *memory.Store, typ string, f *addFlags, scope string, r *vectorstore.Record, now time.Time) ([]written, error) {
	md := r.Metadata
	switch typ {
	case layerrules.Episodic:
		run := f.run
		if run == "" {
			run = "memctl-" + randomHex(8)
		}
		md["run"] = run
		md["scope"] = scope
		if r.Scope.Thread != "" {
			md["thread"] = r.Scope.Thread
		}
		if f.outcome != "" {
			md["outcome"] = f.outcome
		}
		r.ID = layerrules.EpisodeID(f.layer, layerrules.ScopeKey(scope, r.Scope), run)
	case layerrules.Semantic:
		item := md["item_id"]
		if item == "" {
			item = "memctl-" + randomHex(8)
			md["item_id"] = item
		}
		md["role"] = f.role
		if md["seq"] == "" {
			md["seq"] = "0"
		}
		if md["run"] == "" {
			md["run"] = "memctl"
		}
		md["embedding"] = ms.Embedder.Model()
		r.ID = layerrules.MessageID(f.layer, r.Scope, item)
	}
	r.CreatedAt = now.Truncate(time.Microsecond)
	layerrules.Prepare(typ, r, nil)
	if err := layerrules.Check(typ, r); err != nil {
		return nil, err
	}
	if _, err := ms.Records.Get(ctx, r.ID); err == nil {
		return nil, usageErrorf("a memory with id %s exists already (change it with memctl edit)", r.ID)
	} else if !errors.Is(err, vectorstore.ErrNotFound) {
		return nil, err
	}
	vs, err := ms.Embedder.Embed(ctx, []string{r.Text})
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	r.Vector = vs[0]
	if err := ms.Records.Upsert(ctx, *r); err != nil {
		return nil, err
	}
	return []written{{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: "added", Text: r.Text}}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// editable is the part of a record edit changes: id, created_at and the
// vector are not editable (the vector follows the text).
type editable struct {
	Layer     string            `json:"layer"`
	Kind      string            `json:"kind"`
	Scope     vectorstore.Scope `json:"scope"`
	Text      string            `json:"text"`
	Metadata  map[string]string `json:"metadata"`
	ValidFrom *time.Time        `json:"valid_from"`
	ValidTo   *time.Time        `json:"valid_to"`
}

type editFlags struct {
	text, kind, thread, resource, validFrom, validTo, layerType, file string
	meta, unset                                                       []string
}

func (a *app) editCmd() *cobra.Command {
	var f editFlags
	cmd := &cobra.Command{
		Use:   "edit ID",
		Short: "Change a memory, validated as its layer validates it",
		Long: `Change one memory. With flags, change those fields:

  memctl edit ID --text "User is vegan"            (re-embedded)
  memctl edit ID --meta importance=5 --unset-meta origin
  memctl edit ID --valid-to 2026-05-01              (close a temporal fact)

With --file F (or - for stdin), replace the editable fields (layer, kind,
scope, text, metadata, valid_from, valid_to) with the JSON object F holds.
With no flags on a terminal, open $VISUAL or $EDITOR on that JSON, as
kubectl edit does.

The id, creation time and vector are kept; a changed text is re-embedded
with the store's embedder. The result is checked against the layer's rules
(see memctl add --help); derived parts are kept in step: an entity's or
scratchpad note's text prefix, a temporal fact's text and chain keys (edit a
fact's value with --meta value=...). Changing a semantic message's text (or
moving it) deletes the context records that quote it, its own and its
neighbours' in the thread; the layer writes them again from the new text.`,
		Args:              exactArgs(1, "one ID"),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runEdit(cmd.Context(), cmd, args[0], &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.text, "text", "", "new text (- for stdin)")
	fs.StringVarP(&f.kind, "kind", "k", "", "new kind")
	fs.StringVarP(&f.thread, "thread", "t", "", "new thread (\"\" to clear)")
	fs.StringVarP(&f.resource, "resource", "r", "", "new resource (\"\" to clear)")
	fs.StringArrayVar(&f.meta, "meta", nil, "set metadata KEY=VALUE (repeatable)")
	fs.StringArrayVar(&f.unset, "unset-meta", nil, "remove metadata KEY (repeatable)")
	fs.StringVar(&f.validFrom, "valid-from", "", "new start of validity (none to clear)")
	fs.StringVar(&f.validTo, "valid-to", "", "new end of validity (none to clear)")
	fs.StringVar(&f.layerType, "layer-type", "", "the rules of a custom layer id")
	fs.StringVarP(&f.file, "file", "f", "", "replace the editable fields with this JSON (- for stdin)")
	_ = cmd.RegisterFlagCompletionFunc("kind", completeKinds)
	_ = cmd.RegisterFlagCompletionFunc("layer-type", completeLayers)
	return cmd
}

func (a *app) runEdit(ctx context.Context, cmd *cobra.Command, id string, f *editFlags) error {
	if err := checkID(id); err != nil {
		return err
	}
	changed := false
	for _, n := range []string{"text", "kind", "thread", "resource", "meta", "unset-meta", "valid-from", "valid-to"} {
		changed = changed || cmd.Flags().Changed(n)
	}
	if changed && f.file != "" {
		return usageErrorf("--file replaces the record: give no other changes with it")
	}
	now := a.now().UTC()
	// Parse everything before touching the store.
	var vf, vt *time.Time
	for _, p := range []struct {
		name, val string
		dst       **time.Time
	}{{"valid-from", f.validFrom, &vf}, {"valid-to", f.validTo, &vt}} {
		if !cmd.Flags().Changed(p.name) {
			continue
		}
		t := time.Time{}
		if p.val != "none" && p.val != "" {
			var err error
			if t, err = parseTimeFlag("--"+p.name, p.val, now); err != nil {
				return err
			}
		}
		*p.dst = &t
	}
	set := map[string]string{}
	for _, kv := range f.meta {
		k, v, err := parseKV(kv)
		if err != nil {
			return err
		}
		set[k] = v
	}
	if cmd.Flags().Changed("text") {
		t, err := a.readText(f.text)
		if err != nil {
			return err
		}
		f.text = t
	}
	s, err := a.openStore(ctx, openRead, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	old, err := s.coll.Get(ctx, id)
	if errors.Is(err, vectorstore.ErrNotFound) {
		return notFoundf("no memory with id %q in %s", id, s.ref)
	}
	if err != nil {
		return err
	}
	r := old.Clone()
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	switch {
	case f.file != "":
		e, err := a.readEditable(f.file)
		if err != nil {
			return err
		}
		e.apply(&r)
	case changed:
		if cmd.Flags().Changed("text") {
			r.Text = f.text
		}
		if cmd.Flags().Changed("kind") {
			r.Kind = f.kind
		}
		if cmd.Flags().Changed("thread") {
			r.Scope.Thread = f.thread
		}
		if cmd.Flags().Changed("resource") {
			r.Scope.Resource = f.resource
		}
		for k, v := range set {
			r.Metadata[k] = v
		}
		for _, k := range f.unset {
			delete(r.Metadata, k)
		}
		if vf != nil {
			r.ValidFrom = *vf
		}
		if vt != nil {
			r.ValidTo = *vt
		}
	default:
		e, err := a.editInEditor(&old)
		if err != nil {
			return err
		}
		e.apply(&r)
	}
	typ := f.layerType
	if typ == "" {
		typ = r.Layer
	}
	if _, ok := layerrules.Lookup(typ); !ok {
		return usageErrorf("layer %q has no rules memctl knows: pass --layer-type (one of %s)", r.Layer, strings.Join(layerrules.Types, ", "))
	}
	layerrules.Prepare(typ, &r, &old)
	if err := layerrules.Check(typ, &r); err != nil {
		return err
	}
	action := "updated"
	if r.Text != old.Text {
		emb, err := s.embedder(ctx)
		if err != nil {
			return err
		}
		vs, err := emb.Embed(ctx, []string{r.Text})
		if err != nil {
			return fmt.Errorf("embed: %w", err)
		}
		r.Vector = vs[0]
		if _, ok := r.Metadata["embedding"]; ok {
			r.Metadata["embedding"] = emb.Model()
		}
		action = "updated, re-embedded"
	}
	if len(r.Metadata) == 0 {
		r.Metadata = nil
	}
	if recordsEqual(&old, &r) {
		action = "unchanged"
	} else {
		// A semantic message's old text is quoted by its own and its
		// neighbours' context records: they go first (the layer writes
		// them again from the new text), so a failure in between leaves
		// no copy of the old text behind the message.
		var ctxs []vectorstore.Record
		if isSemanticMessage(&old) && (r.Text != old.Text || r.Layer != old.Layer || r.Kind != old.Kind || r.Scope != old.Scope) {
			if ctxs, err = quotingContexts(ctx, s.coll, []vectorstore.Record{old}, nil); err != nil {
				return err
			}
			ids := make([]string, len(ctxs))
			for i := range ctxs {
				ids[i] = ctxs[i].ID
			}
			if err := s.coll.Delete(ctx, ids...); err != nil {
				return fmt.Errorf("delete the context records quoting the old text: %w", err)
			}
		}
		if err := s.coll.Upsert(ctx, r); err != nil {
			return err
		}
		if isSemanticMessage(&old) {
			if err := reindexThreads(ctx, s.coll, []vectorstore.Record{old, r}); err != nil {
				return err
			}
		}
		if len(ctxs) > 0 {
			fmt.Fprintf(a.io.Err, "memctl: deleted %s of the semantic layer that quoted the old message; the layer writes them again\n",
				plural(len(ctxs), "context record", "context records"))
		}
	}
	if a.flags.json {
		r.Vector = nil
		return writeJSONIndent(a.io.Out, &r)
	}
	return a.printWritten([]written{{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: action, Text: r.Text}})
}

func editableOf(r *vectorstore.Record) editable {
	e := editable{Layer: r.Layer, Kind: r.Kind, Scope: r.Scope, Text: r.Text, Metadata: r.Metadata}
	if !r.ValidFrom.IsZero() {
		t := r.ValidFrom
		e.ValidFrom = &t
	}
	if !r.ValidTo.IsZero() {
		t := r.ValidTo
		e.ValidTo = &t
	}
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	return e
}

func (e *editable) apply(r *vectorstore.Record) {
	r.Layer, r.Kind, r.Scope, r.Text = e.Layer, e.Kind, e.Scope, e.Text
	r.Metadata = map[string]string{}
	for k, v := range e.Metadata {
		r.Metadata[k] = v
	}
	r.ValidFrom, r.ValidTo = time.Time{}, time.Time{}
	if e.ValidFrom != nil {
		r.ValidFrom = e.ValidFrom.UTC()
	}
	if e.ValidTo != nil {
		r.ValidTo = e.ValidTo.UTC()
	}
}

func decodeEditable(raw []byte, from string) (editable, error) {
	var e editable
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, usageErrorf("%s: not a record's editable fields (layer, kind, scope, text, metadata, valid_from, valid_to): %v", from, err)
	}
	return e, nil
}

func (a *app) readEditable(path string) (editable, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(a.io.In, 4<<20))
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return editable{}, fmt.Errorf("read %s: %w", path, err)
	}
	return decodeEditable(raw, path)
}

// editInEditor opens $VISUAL or $EDITOR on the record's editable fields.
func (a *app) editInEditor(r *vectorstore.Record) (editable, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	in, isFile := a.io.In.(*os.File)
	if editor == "" || !isFile || !isTerminalFile(in) {
		return editable{}, usageErrorf("nothing to change: give --text, --meta, --valid-to... or --file (an editor opens only on a terminal with $EDITOR set)")
	}
	e := editableOf(r)
	raw, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return editable{}, err
	}
	dir, err := os.MkdirTemp("", "memctl-edit-")
	if err != nil {
		return editable{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memory.json")
	if err := os.WriteFile(path, append(raw, '\n'), 0o600); err != nil {
		return editable{}, err
	}
	parts := strings.Fields(editor)
	c := exec.Command(parts[0], append(parts[1:], path)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		return editable{}, fmt.Errorf("editor %s: %w", parts[0], err)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return editable{}, err
	}
	return decodeEditable(edited, "the edited file")
}

// recordsEqual compares two records field by field, vectors included.
func recordsEqual(x, y *vectorstore.Record) bool {
	if x.ID != y.ID || x.Layer != y.Layer || x.Kind != y.Kind || x.Scope != y.Scope || x.Text != y.Text ||
		!x.CreatedAt.Equal(y.CreatedAt) || !x.ValidFrom.Equal(y.ValidFrom) || !x.ValidTo.Equal(y.ValidTo) ||
		len(x.Metadata) != len(y.Metadata) || len(x.Vector) != len(y.Vector) {
		return false
	}
	for k, v := range x.Metadata {
		if w, ok := y.Metadata[k]; !ok || w != v {
			return false
		}
	}
	for i := range x.Vector {
		if x.Vector[i] != y.Vector[i] {
			return false
		}
	}
	return true
}

func newScratchpad(ms *memory.Store, id, scope string) (core.AnyLayer, error) {
	return scratchpad.New(ms, scratchpad.Options{ID: id, Scope: core.Scope(scope)})
}

func isTerminalFile(f *os.File) bool { return progress.IsTerminal(f) }
