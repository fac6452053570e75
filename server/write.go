package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// formats are the record formats of the memory layers: a record written
// or edited through the API is brought into its layer's shape and checked
// against its layer's rules, as memctl does for a local store, so what a
// client writes is what the layer reads back.
var formats = []memory.RecordFormat{episodic.Format, semantic.Format, entity.Format, observations.Format, temporal.Format, scratchpad.Format}

func formatOf(typ string) (memory.RecordFormat, bool) {
	i := slices.IndexFunc(formats, func(f memory.RecordFormat) bool { return f.Type() == typ })
	if i < 0 {
		return nil, false
	}
	return formats[i], true
}

// layerTypes names the layer types a write may use.
func layerTypes() string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Type()
	}
	return strings.Join(names, ", ")
}

// scopeOf is the layer scope of r: its layer's rule, or what its scope
// keys say for a layer of no known type.
func scopeOf(r *vectorstore.Record) core.Scope {
	if f, ok := formatOf(r.Layer); ok {
		return f.ScopeOf(r)
	}
	return memory.KeyScope(r.Scope)
}

// MemoryAdd adds one memory through its layer's write path: the layer's
// own Put for observations (near-duplicates merge), temporal facts (an
// earlier value of the subject and predicate is closed), entities (notes
// merge) and scratchpad notes; a record in the layer's shape for episodic
// episodes and semantic messages. The server embeds the text.
type MemoryAdd struct {
	// Layer is the layer id; LayerType its rules when the id is a custom
	// one (default: Layer).
	Layer     string `json:"layer"`
	LayerType string `json:"layer_type,omitempty"`
	// Scope is the layer's scope: thread, resource or global (admin keys
	// only); default thread when Thread is set, else resource.
	Scope    string `json:"scope,omitempty"`
	Resource string `json:"resource,omitempty"`
	Thread   string `json:"thread,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Text     string `json:"text,omitempty"`
	// Metadata, ValidFrom and ValidTo apply to episodic and semantic
	// records.
	Metadata  map[string]string `json:"metadata,omitempty"`
	ValidFrom time.Time         `json:"valid_from,omitzero"`
	ValidTo   time.Time         `json:"valid_to,omitzero"`
	// Per layer: entity name, type and priority; scratchpad key; temporal
	// subject, predicate, value and when; observation importance and
	// sources; semantic role; episodic run and outcome.
	Name       string   `json:"name,omitempty"`
	Type       string   `json:"type,omitempty"`
	Priority   *int     `json:"priority,omitempty"`
	Key        string   `json:"key,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Predicate  string   `json:"predicate,omitempty"`
	Value      string   `json:"value,omitempty"`
	When       string   `json:"when,omitempty"`
	Importance int      `json:"importance,omitempty"`
	Sources    []string `json:"sources,omitempty"`
	Role       string   `json:"role,omitempty"`
	Run        string   `json:"run,omitempty"`
	Outcome    string   `json:"outcome,omitempty"`
	// ItemID keys a semantic message (default: a new id).
	ItemID string `json:"item_id,omitempty"`
}

// Written is one record a write stored: its id, and what the layer did
// (added, merged, unchanged, updated, closed, corrected, updated and
// re-embedded).
type Written struct {
	ID       string `json:"id"`
	Layer    string `json:"layer"`
	Kind     string `json:"kind"`
	Action   string `json:"action"`
	Text     string `json:"text"`
	Revision int64  `json:"revision,omitempty"`
}

// WriteResult lists the records a write stored.
type WriteResult struct {
	Written []Written `json:"written"`
	// ContextsDeleted counts the semantic context records that quoted an
	// edited message's old text (the layer writes them again).
	ContextsDeleted int `json:"contexts_deleted,omitempty"`
}

// writeScope resolves the scope of a write for p: the resource must be
// one p may use; a global write needs an admin key.
func writeScope(p *Principal, scope core.Scope, resource, thread string) (vectorstore.Scope, error) {
	if scope == core.ScopeGlobal {
		if !p.Admin() {
			return vectorstore.Scope{}, fmt.Errorf("%w: key %q may not write global memories", ErrForbidden, p.Name)
		}
		if resource != "" || thread != "" {
			return vectorstore.Scope{}, fmt.Errorf("%w: a global memory has no thread or resource", ErrInvalidRequest)
		}
		return vectorstore.Scope{}, nil
	}
	if resource == "" {
		resource = p.only()
	}
	if resource == "" {
		// Every record written through the server belongs to a resource
		// the key is bound to: a thread-only record would be no key's.
		return vectorstore.Scope{}, fmt.Errorf("%w: name a resource", ErrInvalidRequest)
	}
	if !p.Allows(resource) {
		return vectorstore.Scope{}, fmt.Errorf("%w: key %q may not use resource %q", ErrForbidden, p.Name, resource)
	}
	return vectorstore.Scope{Resource: resource, Thread: thread}, nil
}

// AddMemory adds one memory (MemoryAdd) to a resource the key may use.
func (s *Server) AddMemory(ctx context.Context, p *Principal, req MemoryAdd) (WriteResult, error) {
	return op(s, func() (WriteResult, error) {
		typ := req.LayerType
		if typ == "" {
			typ = req.Layer
		}
		format, ok := formatOf(typ)
		switch {
		case req.Layer == "" || strings.Contains(req.Layer, "/"):
			return WriteResult{}, fmt.Errorf("%w: name a layer (an id with no '/')", ErrInvalidRequest)
		case !ok:
			return WriteResult{}, fmt.Errorf("%w: layer type %q: want one of %s", ErrInvalidRequest, typ, layerTypes())
		case req.Kind != "" && !slices.Contains(format.Kinds(), req.Kind):
			return WriteResult{}, fmt.Errorf("%w: kind %q: layer %s writes %s", ErrInvalidRequest, req.Kind, typ, strings.Join(format.Kinds(), " or "))
		case typ == semantic.DefaultID && req.Kind == semantic.KindContext:
			return WriteResult{}, fmt.Errorf("%w: context records are derived by the semantic layer: add the message", ErrInvalidRequest)
		case len(req.Text) > memory.MaxRecordTextBytes:
			return WriteResult{}, fmt.Errorf("%w: text is %d bytes, at most %d", ErrInvalidRequest, len(req.Text), memory.MaxRecordTextBytes)
		case typ != temporal.DefaultID && strings.TrimSpace(req.Text) == "":
			return WriteResult{}, fmt.Errorf("%w: no text", ErrInvalidRequest)
		}
		scope := core.Scope(req.Scope)
		if scope == "" {
			scope = core.ScopeResource
			if req.Thread != "" {
				scope = core.ScopeThread
			}
		}
		if !slices.Contains(format.Scopes(), scope) {
			return WriteResult{}, fmt.Errorf("%w: layer %s cannot be %s-scoped", ErrInvalidRequest, typ, scope)
		}
		sc, err := writeScope(p, scope, req.Resource, req.Thread)
		if err != nil {
			return WriteResult{}, err
		}
		switch {
		case scope == core.ScopeThread && sc.Thread == "":
			return WriteResult{}, fmt.Errorf("%w: scope thread needs a thread", ErrInvalidRequest)
		case scope == core.ScopeResource && typ == semantic.DefaultID && sc.Thread == "":
			return WriteResult{}, fmt.Errorf("%w: a resource-scoped semantic layer keeps each message in a thread of the resource: name the thread", ErrInvalidRequest)
		case scope == core.ScopeResource && typ != semantic.DefaultID && sc.Thread != "":
			return WriteResult{}, fmt.Errorf("%w: a resource-scoped memory has no thread", ErrInvalidRequest)
		}
		common := memory.Common{ID: req.Layer, Scope: scope}
		switch typ {
		case observations.DefaultID:
			return s.addObservation(ctx, common, sc, req)
		case temporal.DefaultID:
			return s.addFact(ctx, common, sc, req)
		case entity.DefaultID:
			return s.addEntity(ctx, common, sc, req)
		case scratchpad.DefaultID:
			return s.addNote(ctx, common, sc, req)
		}
		var r vectorstore.Record
		if typ == semantic.DefaultID {
			role := req.Role
			if role == "" {
				role = string(core.RoleUser)
			}
			item := req.ItemID
			if item == "" {
				item = "api-" + newID()
			}
			r = semantic.Format.Message(req.Layer, sc, role, req.Text, item, "api", s.mem.Embedder.Model(), maps.Clone(req.Metadata))
		} else {
			run := req.Run
			if run == "" {
				run = "api-" + newID()
			}
			r = episodic.Format.Episode(req.Layer, scope, sc, run, req.Outcome, req.Text, maps.Clone(req.Metadata))
		}
		r.ValidFrom, r.ValidTo = req.ValidFrom.UTC(), req.ValidTo.UTC()
		if req.Kind != "" {
			r.Kind = req.Kind
		}
		format.Prepare(&r, nil)
		if err := format.Validate(&r); err != nil {
			return WriteResult{}, invalid(err)
		}
		vs, err := s.mem.Embedder.Embed(ctx, []string{r.Text})
		if err != nil {
			return WriteResult{}, fmt.Errorf("server: embed: %w", err)
		}
		r.Vector = vs[0]
		// Revision 0: the record must not exist, so an add never replaces
		// a memory (edit does, at the revision it read).
		rev, err := s.mem.Records.UpsertIf(ctx, r, 0)
		if errors.Is(err, vectorstore.ErrConflict) {
			return WriteResult{}, fmt.Errorf("%w: a memory with id %s exists already (edit it instead)", ErrConflict, r.ID)
		} else if err != nil {
			return WriteResult{}, err
		}
		if environment.IsSemanticMessage(&r) {
			if err := environment.ReindexThreads(ctx, s.mem.Records, []vectorstore.Record{r}); err != nil {
				return WriteResult{}, err
			}
		}
		return WriteResult{Written: []Written{{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: "added", Text: r.Text, Revision: rev}}}, nil
	})
}

// layerError is a layer's rejection of the input as an invalid request.
func layerError(err error, sentinels ...error) error {
	var ce *core.ConfigError
	if errors.As(err, &ce) {
		return invalid(err)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return invalid(err)
		}
	}
	return err
}

func (s *Server) addObservation(ctx context.Context, c memory.Common, sc vectorstore.Scope, req MemoryAdd) (WriteResult, error) {
	l, err := observations.New(s.mem, observations.Options{Common: c, DisableExtraction: true})
	if err != nil {
		return WriteResult{}, layerError(err)
	}
	res, err := l.Put(ctx, sc, observations.Observation{Text: req.Text, Importance: req.Importance, Sources: req.Sources})
	if err != nil {
		return WriteResult{}, layerError(err, observations.ErrInvalidObservation, observations.ErrScope)
	}
	action := "added"
	switch {
	case res.Merged > 0:
		action = "merged"
	case res.Unchanged > 0:
		action = "unchanged"
	}
	var out WriteResult
	for _, id := range res.IDs {
		out.Written = append(out.Written, Written{ID: id, Layer: c.ID, Kind: observations.Kind, Action: action, Text: req.Text})
	}
	return out, nil
}

func (s *Server) addFact(ctx context.Context, c memory.Common, sc vectorstore.Scope, req MemoryAdd) (WriteResult, error) {
	value := req.Value
	switch {
	case req.Text != "" && value == "":
		value = req.Text
	case req.Text != "" && req.Text != value:
		return WriteResult{}, fmt.Errorf("%w: temporal: give the value (the text is derived from subject, predicate and value)", ErrInvalidRequest)
	}
	l, err := temporal.New(s.mem, temporal.Options{Common: c})
	if err != nil {
		return WriteResult{}, layerError(err)
	}
	res, err := l.Put(ctx, sc, time.Time{}, temporal.Input{Subject: req.Subject, Predicate: req.Predicate, Value: value, When: req.When})
	if err != nil {
		return WriteResult{}, layerError(err, temporal.ErrInvalidFact, temporal.ErrScope)
	}
	var out WriteResult
	action := "added"
	if res.Unchanged > 0 && res.Added == 0 {
		action = "unchanged"
	}
	for _, f := range res.Facts {
		out.Written = append(out.Written, Written{ID: f.ID, Layer: c.ID, Kind: temporal.Kind, Action: action, Text: f.Subject + " " + f.Predicate + ": " + f.Value})
	}
	for _, f := range res.Superseded {
		act, kind := "closed", temporal.Kind
		if f.Corrected() {
			act, kind = "corrected", temporal.KindCorrected
		}
		out.Written = append(out.Written, Written{ID: f.ID, Layer: c.ID, Kind: kind, Action: act, Text: f.Subject + " " + f.Predicate + ": " + f.Value})
	}
	return out, nil
}

func (s *Server) addEntity(ctx context.Context, c memory.Common, sc vectorstore.Scope, req MemoryAdd) (WriteResult, error) {
	if strings.TrimSpace(req.Name) == "" || req.Type == "" {
		return WriteResult{}, fmt.Errorf("%w: entity: a name and a type are needed", ErrInvalidRequest)
	}
	l, err := entity.New(s.mem, entity.Options{Common: c})
	if err != nil {
		return WriteResult{}, layerError(err)
	}
	id := entity.Format.RecordID(&vectorstore.Record{Layer: c.ID, Scope: sc,
		Metadata: map[string]string{entity.MetaName: req.Name, entity.MetaType: req.Type, memory.MetaScope: string(c.Scope)}})
	return s.putOne(ctx, entity.Format, id, func() error {
		_, err := l.Put(ctx, sc, entity.Update{Name: req.Name, Type: entity.Type(req.Type), Notes: []string{req.Text}, Priority: req.Priority})
		return layerError(err, entity.ErrInvalidUpdate, entity.ErrScope)
	})
}

func (s *Server) addNote(ctx context.Context, c memory.Common, sc vectorstore.Scope, req MemoryAdd) (WriteResult, error) {
	if strings.TrimSpace(req.Key) == "" {
		return WriteResult{}, fmt.Errorf("%w: scratchpad: a key is needed", ErrInvalidRequest)
	}
	l, err := scratchpad.New(s.mem, scratchpad.Options{Common: c})
	if err != nil {
		return WriteResult{}, layerError(err)
	}
	id := scratchpad.Format.RecordID(&vectorstore.Record{Layer: c.ID, Scope: sc,
		Metadata: map[string]string{scratchpad.MetaKey: req.Key, memory.MetaScope: string(c.Scope)}})
	return s.putOne(ctx, scratchpad.Format, id, func() error {
		_, err := l.Put(ctx, sc, map[string]string{req.Key: req.Text})
		return layerError(err, scratchpad.ErrInvalidUpdate, scratchpad.ErrScope)
	})
}

// putOne runs put, a layer's write of the one record with this id, and
// reports the record as the layer stored it: updated when it was stored
// before.
func (s *Server) putOne(ctx context.Context, format memory.RecordFormat, id string, put func() error) (WriteResult, error) {
	if id == "" {
		return WriteResult{}, fmt.Errorf("%w: %s: the input names no record", ErrInvalidRequest, format.Type())
	}
	_, err := s.mem.Records.Get(ctx, id)
	if err != nil && !errors.Is(err, vectorstore.ErrNotFound) {
		return WriteResult{}, err
	}
	existed := err == nil
	if err := put(); err != nil {
		return WriteResult{}, err
	}
	r, err := s.mem.Records.Get(ctx, id)
	if err != nil {
		return WriteResult{}, fmt.Errorf("%s: read the record back: %w", format.Type(), err)
	}
	w := Written{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: "added", Text: r.Text, Revision: r.Revision}
	if existed {
		w.Action = "updated"
	}
	return WriteResult{Written: []Written{w}}, nil
}

// MemoryEdit replaces the editable fields of one memory (layer, kind,
// scope, text, metadata, validity) if its stored revision is Revision:
// a compare-and-swap, so a write made since the client read the record
// is never overwritten (ErrConflict). The id, creation time and vector
// are kept; a changed text is re-embedded by the server. An empty
// Resource keeps the memory's resource: the server never moves a memory
// to global scope.
type MemoryEdit struct {
	Revision  int64             `json:"revision"`
	LayerType string            `json:"layer_type,omitempty"`
	Layer     string            `json:"layer"`
	Kind      string            `json:"kind"`
	Resource  string            `json:"resource,omitempty"`
	Thread    string            `json:"thread,omitempty"`
	Text      string            `json:"text"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	ValidFrom time.Time         `json:"valid_from,omitzero"`
	ValidTo   time.Time         `json:"valid_to,omitzero"`
}

// EditMemory changes memory id (MemoryEdit). The memory must be of a
// resource the key may use, and stay in one: a record cannot be moved
// out of the key's reach.
func (s *Server) EditMemory(ctx context.Context, p *Principal, id string, req MemoryEdit) (WriteResult, error) {
	return op(s, func() (WriteResult, error) {
		if req.Revision <= 0 {
			return WriteResult{}, fmt.Errorf("%w: give the revision the record was read at", ErrInvalidRequest)
		}
		old, err := s.owned(ctx, p, id)
		if err != nil {
			return WriteResult{}, err
		}
		if old.Revision != req.Revision {
			return WriteResult{}, fmt.Errorf("%w: memory %s is at revision %d, not %d: nothing written", ErrConflict, id, old.Revision, req.Revision)
		}
		if req.Resource == "" {
			// Left out (the field is omitempty): the memory stays where
			// it is. Moving one to global scope, where every resource
			// reads it, is not something an omission should do.
			req.Resource = old.Scope.Resource
		}
		if req.Resource != old.Scope.Resource && !p.Allows(req.Resource) {
			return WriteResult{}, fmt.Errorf("%w: key %q may not move a memory to resource %q", ErrForbidden, p.Name, req.Resource)
		}
		if len(req.Text) > memory.MaxRecordTextBytes {
			return WriteResult{}, fmt.Errorf("%w: text is %d bytes, at most %d", ErrInvalidRequest, len(req.Text), memory.MaxRecordTextBytes)
		}
		r := old.Clone()
		r.Layer, r.Kind, r.Scope, r.Text = req.Layer, req.Kind, vectorstore.Scope{Resource: req.Resource, Thread: req.Thread}, req.Text
		r.Metadata = maps.Clone(req.Metadata)
		if r.Metadata == nil {
			r.Metadata = map[string]string{}
		}
		r.ValidFrom, r.ValidTo = time.Time{}, time.Time{}
		if !req.ValidFrom.IsZero() {
			r.ValidFrom = req.ValidFrom.UTC()
		}
		if !req.ValidTo.IsZero() {
			r.ValidTo = req.ValidTo.UTC()
		}
		typ := req.LayerType
		if typ == "" {
			typ = r.Layer
		}
		format, ok := formatOf(typ)
		if !ok {
			return WriteResult{}, fmt.Errorf("%w: layer %q has no known rules: give its layer_type (one of %s)", ErrInvalidRequest, r.Layer, layerTypes())
		}
		format.Prepare(&r, &old)
		if err := format.Validate(&r); err != nil {
			return WriteResult{}, invalid(err)
		}
		action := "updated"
		if r.Text != old.Text {
			vs, err := s.mem.Embedder.Embed(ctx, []string{r.Text})
			if err != nil {
				return WriteResult{}, fmt.Errorf("server: embed: %w", err)
			}
			r.Vector = vs[0]
			if _, ok := r.Metadata[semantic.MetaEmbedding]; ok {
				r.Metadata[semantic.MetaEmbedding] = s.mem.Embedder.Model()
			}
			action = "updated, re-embedded"
		}
		if len(r.Metadata) == 0 {
			r.Metadata = nil
		}
		if unchanged(&old, &r) {
			return WriteResult{Written: []Written{{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: "unchanged", Text: r.Text, Revision: old.Revision}}}, nil
		}
		// A semantic message's old text is quoted by its own and its
		// neighbours' context records: they go first (the layer writes
		// them again), so a failure in between leaves no copy of the old
		// text behind the message.
		var ctxs []vectorstore.Record
		if environment.IsSemanticMessage(&old) && (r.Text != old.Text || r.Layer != old.Layer || r.Kind != old.Kind || r.Scope != old.Scope) {
			if ctxs, err = environment.QuotingContexts(ctx, s.mem.Records, []vectorstore.Record{old}, nil); err != nil {
				return WriteResult{}, err
			}
			if err := s.mem.Records.Delete(ctx, idsOf(ctxs)...); err != nil {
				return WriteResult{}, fmt.Errorf("delete the context records quoting the old text: %w", err)
			}
		}
		rev, err := s.mem.Records.UpsertIf(ctx, r, old.Revision)
		if errors.Is(err, vectorstore.ErrConflict) {
			if len(ctxs) > 0 {
				// The message stands as the other writer left it; the
				// context records quoting the old text are gone, and the
				// layer writes them again from the thread's messages.
				return WriteResult{}, fmt.Errorf("%w: memory %s changed while it was edited: the memory was not written (%d context records quoting its old text were removed; the semantic layer writes them again): %w", ErrConflict, id, len(ctxs), err)
			}
			return WriteResult{}, fmt.Errorf("%w: memory %s changed while it was edited: nothing written: %w", ErrConflict, id, err)
		} else if err != nil {
			return WriteResult{}, err
		}
		if environment.IsSemanticMessage(&old) {
			if err := environment.ReindexThreads(ctx, s.mem.Records, []vectorstore.Record{old, r}); err != nil {
				return WriteResult{}, err
			}
		}
		return WriteResult{Written: []Written{{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: action, Text: r.Text, Revision: rev}},
			ContextsDeleted: len(ctxs)}, nil
	})
}

// unchanged reports whether an edit changes nothing a reader sees.
func unchanged(a, b *vectorstore.Record) bool {
	return a.Layer == b.Layer && a.Kind == b.Kind && a.Scope == b.Scope && a.Text == b.Text &&
		maps.Equal(a.Metadata, b.Metadata) && a.ValidFrom.Equal(b.ValidFrom) && a.ValidTo.Equal(b.ValidTo)
}

func idsOf(rs []vectorstore.Record) []string {
	ids := make([]string, len(rs))
	for i := range rs {
		ids[i] = rs[i].ID
	}
	return ids
}

// newID is a random id for the records a write names itself (a message's
// item, an episode's run).
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
