package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// semanticType is the layer type of the semantic layer.
var semanticType = semantic.DefaultID

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
when --thread is given, else resource when --resource is given; a global
memory (read by every thread and resource) needs --scope global.
A thread that belongs to a resource is named by both: -t T -r R writes a
thread-scoped memory carrying both ids, as the runtime writes them.
Every record is checked against its layer's rules: a kind the layer reads,
a scope it can be configured with, the metadata it needs, a text of at most
8 KiB of UTF-8. It is embedded with the store's embedder and written; the
ids written are printed. A custom layer id takes the rules of --layer-type.

With --server, the memory is added through the server (POST /v1/memories),
which runs the same layer path, embeds the text with its own embedder and
refuses a resource the API key is not bound to (and global memories unless
the key is an admin's).`

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
	fs.StringVarP(&f.layer, "layer", "l", "", "the layer (required): "+layerTypes())
	fs.StringVar(&f.layerType, "layer-type", "", "the rules of a custom layer id: one of "+layerTypes())
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
		return []string{string(entity.Person), string(entity.Organization), string(entity.Place), string(entity.Concept), string(entity.Other)}, cobra.ShellCompDirectiveNoFileComp
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
	b, err := io.ReadAll(io.LimitReader(a.io.In, memory.MaxRecordTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

func (a *app) runAdd(ctx context.Context, cmd *cobra.Command, f *addFlags) error {
	if f.layer == "" {
		return usageErrorf("--layer is required (one of %s)", layerTypes())
	}
	typ := f.layerType
	if typ == "" {
		typ = f.layer
	}
	format, ok := formatOf(typ)
	if !ok {
		if f.layerType != "" {
			return usageErrorf("--layer-type %q: want one of %s", typ, layerTypes())
		}
		return usageErrorf("unknown layer %q: want one of %s (or give a custom layer's --layer-type)", f.layer, layerTypes())
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
		entity.DefaultID:       {"name", "type", "priority"},
		scratchpad.DefaultID:   {"key"},
		temporal.DefaultID:     {"subject", "predicate", "value", "when"},
		observations.DefaultID: {"importance", "source"},
		semanticType:           {"role", "meta", "valid-from", "valid-to"},
		episodic.DefaultID:     {"run", "outcome", "meta", "valid-from", "valid-to"},
	}
	for t, names := range own {
		if t == typ {
			continue
		}
		for _, n := range names {
			if cmd.Flags().Changed(n) && !slices.Contains(own[typ], n) {
				return usageErrorf("--%s does not apply to layer %s", n, typ)
			}
		}
	}
	if typ == semanticType && f.kind == semantic.KindContext {
		return usageErrorf("context records are derived by the semantic layer from the messages around them: add the message")
	}
	if f.kind != "" && !slices.Contains(format.Kinds(), f.kind) {
		return usageErrorf("--kind %q: layer %s writes %s", f.kind, typ, strings.Join(format.Kinds(), " or "))
	}
	scope := core.Scope(f.scope)
	if scope == "" && f.thread == "" && f.resource == "" {
		// A memory with no scope would be global: every thread and
		// resource reads it. That has to be asked for.
		return usageErrorf("give the memory's scope: --thread T (thread-scoped), --resource R (resource-scoped), both (a resource's thread), or --scope global (read by every thread and resource)")
	}
	if scope == "" {
		scope = memory.KeyScope(vectorstore.Scope{Thread: f.thread, Resource: f.resource})
	}
	if !slices.Contains(format.Scopes(), scope) {
		if f.scope == "" {
			// The scope was inferred: say what to give.
			return usageErrorf("layer %s cannot be %s-scoped: give --thread (for a thread-scoped layer) or --resource (resource-scoped)", typ, scope)
		}
		scopes := make([]string, len(format.Scopes()))
		for i, s := range format.Scopes() {
			scopes[i] = string(s)
		}
		return usageErrorf("--scope %s: layer %s can be %s-scoped only", scope, typ, strings.Join(scopes, " or "))
	}
	sc := vectorstore.Scope{Thread: f.thread, Resource: f.resource}
	switch scope {
	case core.ScopeThread:
		if f.thread == "" {
			return usageErrorf("scope thread needs --thread")
		}
	case core.ScopeResource:
		switch {
		case f.resource == "" && typ == semanticType:
			return usageErrorf("a resource-scoped semantic layer keeps each message in a thread of the resource: give --resource and --thread")
		case f.resource == "":
			return usageErrorf("scope resource needs --resource")
		case typ == semanticType && f.thread == "":
			return usageErrorf("a resource-scoped semantic layer keeps each message in a thread of the resource: give --thread too")
		case f.thread != "" && typ != semanticType:
			return usageErrorf("a resource-scoped memory has no thread: drop --thread or use --scope thread")
		}
	case core.ScopeGlobal:
		if f.thread != "" || f.resource != "" {
			return usageErrorf("a global memory has no thread or resource")
		}
	}
	if typ != temporal.DefaultID && strings.TrimSpace(f.text) == "" {
		return usageErrorf("no text: give it as an argument, with --text, or - for stdin")
	}
	if len(f.text) > memory.MaxRecordTextBytes {
		return usageErrorf("text is %d bytes, at most %d", len(f.text), memory.MaxRecordTextBytes)
	}
	md, err := parseMeta(f.meta)
	if err != nil {
		return err
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

	if rc, err := a.remoteClient(); err != nil {
		return err
	} else if rc != nil {
		return a.remoteAdd(ctx, rc, cmd, f, scope, md, validFrom, validTo)
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
	case observations.DefaultID:
		out, err = addObservation(ctx, ms, f, scope, sc)
	case temporal.DefaultID:
		out, err = addFact(ctx, ms, f, scope, sc)
	case entity.DefaultID:
		out, err = addEntity(ctx, ms, f, scope, sc)
	case scratchpad.DefaultID:
		out, err = addNote(ctx, ms, f, scope, sc)
	default:
		// The checks above leave sc as the scope's records carry it.
		var r vectorstore.Record
		if typ == semanticType {
			r = semantic.Format.Message(f.layer, sc, f.role, f.text, "memctl-"+randomHex(8), "memctl", ms.Embedder.Model(), md)
		} else {
			run := f.run
			if run == "" {
				run = "memctl-" + randomHex(8)
			}
			r = episodic.Format.Episode(f.layer, scope, sc, run, f.outcome, f.text, md)
		}
		r.ValidFrom, r.ValidTo, r.CreatedAt = validFrom, validTo, now.Truncate(time.Microsecond)
		out, err = addRecord(ctx, ms, format, &r)
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
	rows := make([][]string, len(out))
	for i, w := range out {
		rows[i] = []string{cell(w.ID), cell(w.Layer), cell(w.Kind), w.Action, cell(clip(w.Text, 0))}
	}
	return fitTable(a.io.Out, a.width(), []column{{name: "ID"}, {name: "LAYER", min: 8}, {name: "KIND", min: 6, drop: 1},
		{name: "ACTION"}, {name: "TEXT", min: 12}}, rows)
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

func addObservation(ctx context.Context, ms *memory.Store, f *addFlags, scope core.Scope, sc vectorstore.Scope) ([]written, error) {
	l, err := observations.New(ms, observations.Options{Common: memory.Common{ID: f.layer, Scope: scope}, DisableExtraction: true})
	if err != nil {
		return nil, layerInputError(err)
	}
	res, err := l.Put(ctx, sc, observations.Observation{Text: f.text, Importance: f.importance, Sources: f.sources})
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

func addFact(ctx context.Context, ms *memory.Store, f *addFlags, scope core.Scope, sc vectorstore.Scope) ([]written, error) {
	if f.text != "" && f.value == "" {
		f.value = f.text
	} else if f.text != "" && f.text != f.value {
		return nil, usageErrorf("temporal: give the value with --value (the text is derived from subject, predicate and value)")
	}
	l, err := temporal.New(ms, temporal.Options{Common: memory.Common{ID: f.layer, Scope: scope}})
	if err != nil {
		return nil, layerInputError(err)
	}
	res, err := l.Put(ctx, sc, time.Time{}, temporal.Input{Subject: f.subject, Predicate: f.predicate, Value: f.value, When: f.when})
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

// addEntity writes one entity through the entity layer's Go API, the
// path of the model's update calls: its notes merge into what the layer
// holds of it (records made from outside included) and the scope stays
// within the layer's MaxEntities.
func addEntity(ctx context.Context, ms *memory.Store, f *addFlags, scope core.Scope, sc vectorstore.Scope) ([]written, error) {
	if strings.TrimSpace(f.name) == "" || f.typ == "" {
		return nil, usageErrorf("entity: --name and --type are required")
	}
	l, err := entity.New(ms, entity.Options{Common: memory.Common{ID: f.layer, Scope: scope}})
	if err != nil {
		return nil, layerInputError(err)
	}
	var prio *int
	if f.priority != 0 {
		prio = &f.priority
	}
	id := entity.Format.RecordID(&vectorstore.Record{Layer: f.layer, Scope: sc,
		Metadata: map[string]string{entity.MetaName: f.name, entity.MetaType: f.typ, memory.MetaScope: string(scope)}})
	return putOne(ctx, ms, entity.Format, id, func() error {
		_, err := l.Put(ctx, sc, entity.Update{Name: f.name, Type: entity.Type(f.typ), Notes: []string{f.text}, Priority: prio})
		return putError(entity.Format, err, entity.ErrInvalidUpdate, entity.ErrScope)
	})
}

// addNote sets one key through the scratchpad layer's Go API, the path of
// the model's update calls: within the layer's key limit, replacing the
// records the key was read from.
func addNote(ctx context.Context, ms *memory.Store, f *addFlags, scope core.Scope, sc vectorstore.Scope) ([]written, error) {
	if strings.TrimSpace(f.key) == "" {
		return nil, usageErrorf("scratchpad: --key is required")
	}
	l, err := scratchpad.New(ms, scratchpad.Options{Common: memory.Common{ID: f.layer, Scope: scope}})
	if err != nil {
		return nil, layerInputError(err)
	}
	id := scratchpad.Format.RecordID(&vectorstore.Record{Layer: f.layer, Scope: sc,
		Metadata: map[string]string{scratchpad.MetaKey: f.key, memory.MetaScope: string(scope)}})
	return putOne(ctx, ms, scratchpad.Format, id, func() error {
		_, err := l.Put(ctx, sc, map[string]string{f.key: f.text})
		return putError(scratchpad.Format, err, scratchpad.ErrInvalidUpdate, scratchpad.ErrScope)
	})
}

// putOne runs put, a layer's write of the one record with this id (""
// when the input names none: put refuses it), and reports the record
// as the layer stored it: updated when the id was stored before.
func putOne(ctx context.Context, ms *memory.Store, format memory.RecordFormat, id string, put func() error) ([]written, error) {
	existed := false
	if id != "" {
		_, err := ms.Records.Get(ctx, id)
		if err != nil && !errors.Is(err, vectorstore.ErrNotFound) {
			return nil, err
		}
		existed = err == nil
	}
	if err := put(); err != nil {
		return nil, err
	}
	r, err := ms.Records.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%s: read the record back: %w", format.Type(), err)
	}
	w := written{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: "added", Text: r.Text}
	if existed {
		w.Action = "updated"
	}
	return []written{w}, nil
}

// putError is a layer's rejection of memctl's input as a usage error
// naming the layer type, other errors as they are.
func putError(format memory.RecordFormat, err, invalid, scope error) error {
	if errors.Is(err, invalid) {
		return usageErrorf("%s: %v", format.Type(), err)
	}
	return layerInputError(err, scope)
}

// addRecord writes a new episodic or semantic record.
func addRecord(ctx context.Context, ms *memory.Store, format memory.RecordFormat, r *vectorstore.Record) ([]written, error) {
	format.Prepare(r, nil)
	if err := format.Validate(r); err != nil {
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
