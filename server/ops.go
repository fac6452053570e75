package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// Limits of one request, beside the body size.
const (
	// MaxSearchK bounds SearchRequest.K.
	MaxSearchK = 100
	// DefaultSearchK is SearchRequest.K when 0.
	DefaultSearchK = 10
	// MaxListLimit bounds ListRequest.Limit; DefaultListLimit is its 0.
	MaxListLimit     = 1000
	DefaultListLimit = 100
)

// Memory is one stored record as the API returns it: the record's fields
// (vectors left out) and, for a search, its score.
type Memory struct {
	ID        string            `json:"id"`
	Layer     string            `json:"layer,omitempty"`
	Kind      string            `json:"kind,omitempty"`
	Resource  string            `json:"resource,omitempty"`
	Thread    string            `json:"thread,omitempty"`
	Text      string            `json:"text,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	ValidFrom *time.Time        `json:"valid_from,omitempty"`
	ValidTo   *time.Time        `json:"valid_to,omitempty"`
	Revision  int64             `json:"revision,omitempty"`
	Score     float64           `json:"score,omitempty"`
	// Vector is the record's embedding and Terms its lexical document,
	// in a listing that asks for them (an export, which must carry what
	// the store holds).
	Vector []float32         `json:"vector,omitempty"`
	Terms  vectorstore.Terms `json:"terms,omitempty"`
}

func memoryOf(r vectorstore.Record, score float64) Memory {
	m := Memory{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Resource: r.Scope.Resource, Thread: r.Scope.Thread,
		Text: r.Text, Metadata: r.Metadata, CreatedAt: r.CreatedAt, Revision: r.Revision, Score: score}
	if !r.ValidFrom.IsZero() {
		t := r.ValidFrom
		m.ValidFrom = &t
	}
	if !r.ValidTo.IsZero() {
		t := r.ValidTo
		m.ValidTo = &t
	}
	return m
}

// resourceOf resolves the resource a request names: the key's only
// resource when it leaves it out, and a refusal when the key may not use
// it.
func resourceOf(p *Principal, resource string) (string, error) {
	if resource == "" {
		resource = p.only()
	}
	if resource == "" {
		return "", fmt.Errorf("%w: name a resource", ErrInvalidRequest)
	}
	if !p.Allows(resource) {
		return "", fmt.Errorf("%w: key %q may not use resource %q", ErrForbidden, p.Name, resource)
	}
	return resource, nil
}

// op runs one operation: admitted unless the server drains, with its
// errors classified.
func op[T any](s *Server, fn func() (T, error)) (T, error) {
	if err := s.enter(); err != nil {
		var zero T
		return zero, err
	}
	defer s.leave()
	out, err := fn()
	return out, classify(err)
}

// SearchRequest asks for the memories of a resource nearest to a query.
type SearchRequest struct {
	Resource string `json:"resource,omitempty" jsonschema:"the resource (user) whose memories to search; may be left out when the key has one resource"`
	Query    string `json:"query" jsonschema:"what to look for, in plain words"`
	Layer    string `json:"layer,omitempty" jsonschema:"only this layer's memories: semantic, entity, temporal, episodic, observations, scratchpad"`
	Thread   string `json:"thread,omitempty" jsonschema:"only this thread's memories"`
	K        int    `json:"k,omitempty" jsonschema:"how many results, 1 to 100 (default 10)"`
}

// SearchResult are the best memories, best first.
type SearchResult struct {
	Memories []Memory `json:"memories"`
}

// Search embeds the query with the store's embedder and returns the
// resource's nearest memories across layers (those the request filters),
// with their similarity.
func (s *Server) Search(ctx context.Context, p *Principal, req SearchRequest) (SearchResult, error) {
	return op(s, func() (SearchResult, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return SearchResult{}, err
		}
		q := strings.TrimSpace(req.Query)
		k := req.K
		switch {
		case q == "":
			return SearchResult{}, fmt.Errorf("%w: empty query", ErrInvalidRequest)
		case k == 0:
			k = DefaultSearchK
		case k < 0 || k > MaxSearchK:
			return SearchResult{}, fmt.Errorf("%w: k must be in 1..%d", ErrInvalidRequest, MaxSearchK)
		}
		start := time.Now()
		out, err := s.search(ctx, res, req.Layer, req.Thread, q, k)
		s.metrics.RecordRecall(ctx, req.Layer, time.Since(start), err)
		return out, err
	})
}

func (s *Server) search(ctx context.Context, resource, layer, thread, q string, k int) (SearchResult, error) {
	vs, err := s.mem.Embedder.Embed(ctx, []string{q})
	if err != nil {
		return SearchResult{}, fmt.Errorf("server: embed the query: %w", err)
	}
	// The semantic layer keeps each message twice, alone and in its
	// context (derived data with a vector of its own): asking for twice as
	// many leaves room to drop the context copies and still answer k.
	ms, err := s.mem.Records.Query(ctx, vs[0], vectorstore.QueryOptions{K: 2 * k,
		Filter: vectorstore.Filter{Resource: resource, Layer: layer, Thread: thread}})
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Memories: make([]Memory, 0, k)}
	for _, m := range ms {
		if m.Record.Layer == s.recall.ID && m.Record.Kind == semantic.KindContext {
			continue
		}
		if out.Memories = append(out.Memories, memoryOf(m.Record, m.Score)); len(out.Memories) == k {
			break
		}
	}
	return out, nil
}

// ListRequest pages through a resource's memories, oldest first.
type ListRequest struct {
	Resource  string `json:"resource,omitempty" jsonschema:"the resource whose memories to list; may be left out when the key has one resource"`
	Layer     string `json:"layer,omitempty" jsonschema:"only this layer's memories"`
	Kind      string `json:"kind,omitempty" jsonschema:"only memories of this kind (fact, entity, note, message, ...)"`
	Thread    string `json:"thread,omitempty" jsonschema:"only this thread's memories"`
	Limit     int    `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous page"`
	// Newest lists newest first.
	Newest bool `json:"newest,omitempty" jsonschema:"newest first instead of oldest first"`
	// Vectors and Terms return the records' vectors and lexical
	// documents too (an export's listing).
	Vectors bool `json:"vectors,omitempty" jsonschema:"include each memory's embedding vector"`
	Terms   bool `json:"terms,omitempty" jsonschema:"include each memory's lexical document (term weights)"`
}

// ListResult is one page.
type ListResult struct {
	Memories      []Memory `json:"memories"`
	NextPageToken string   `json:"next_page_token,omitempty"`
}

// List returns one page of a resource's memories. An admin key may list
// every resource's by naming the resource "*".
func (s *Server) List(ctx context.Context, p *Principal, req ListRequest) (ListResult, error) {
	return op(s, func() (ListResult, error) {
		f := vectorstore.Filter{Layer: req.Layer, Kind: req.Kind, Thread: req.Thread}
		if !(p.Admin() && req.Resource == AllResources) {
			res, err := resourceOf(p, req.Resource)
			if err != nil {
				return ListResult{}, err
			}
			f.Resource = res
		}
		limit := req.Limit
		switch {
		case limit == 0:
			limit = DefaultListLimit
		case limit < 0 || limit > MaxListLimit:
			return ListResult{}, fmt.Errorf("%w: limit must be in 1..%d", ErrInvalidRequest, MaxListLimit)
		}
		o := vectorstore.ListOptions{Filter: f, Limit: limit, PageToken: req.PageToken, WithVectors: req.Vectors}
		if req.Newest {
			o.Order = vectorstore.Descending
		}
		recs, next, err := s.mem.Records.List(ctx, o)
		if err != nil {
			return ListResult{}, err
		}
		out := ListResult{Memories: make([]Memory, 0, len(recs)), NextPageToken: next}
		for _, r := range recs {
			m := memoryOf(r, 0)
			if req.Vectors {
				m.Vector = r.Vector
			}
			if req.Terms {
				m.Terms = r.Terms
			}
			out.Memories = append(out.Memories, m)
		}
		return out, nil
	})
}

// Get returns one memory by id. A memory of a resource the key may not
// use is not found, as is a global one for a key that is not an admin's.
func (s *Server) Get(ctx context.Context, p *Principal, id string) (Memory, error) {
	return op(s, func() (Memory, error) {
		r, err := s.owned(ctx, p, id)
		if err != nil {
			return Memory{}, err
		}
		return memoryOf(r, 0), nil
	})
}

// owned reads record id if p may see it.
func (s *Server) owned(ctx context.Context, p *Principal, id string) (vectorstore.Record, error) {
	if strings.TrimSpace(id) == "" {
		return vectorstore.Record{}, fmt.Errorf("%w: empty id", ErrInvalidRequest)
	}
	r, err := s.mem.Records.Get(ctx, id)
	if err == nil && !p.Allows(r.Scope.Resource) {
		err = vectorstore.ErrNotFound // another resource's ids are not confirmed to exist
	}
	if err != nil {
		return vectorstore.Record{}, fmt.Errorf("%w: no memory %q: %w", ErrNotFound, id, err)
	}
	return r, nil
}

// ForgetRequest deletes memories of a resource: those with these ids, or,
// with All, everything the resource left (records, layer state, recorded
// assemblies).
type ForgetRequest struct {
	Resource string   `json:"resource,omitempty" jsonschema:"the resource whose memories to forget; may be left out when the key has one resource"`
	IDs      []string `json:"ids,omitempty" jsonschema:"ids of the memories to delete (from search or list)"`
	All      bool     `json:"all,omitempty" jsonschema:"forget everything about the resource: every memory and its layer state"`
}

// ForgetResult says what went.
type ForgetResult struct {
	// Records counts the records deleted (the semantic layer's context
	// records of deleted messages included), StateKeys the layer-state
	// and recorded-assembly keys.
	Records     int `json:"records"`
	StateKeys   int `json:"state_keys"`
	NotFoundIDs int `json:"not_found_ids,omitempty"`
}

// Forget deletes memories of one resource. Ids of other resources' (or of
// global) memories are counted as not found and left alone.
func (s *Server) Forget(ctx context.Context, p *Principal, req ForgetRequest) (ForgetResult, error) {
	return op(s, func() (ForgetResult, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return ForgetResult{}, err
		}
		switch {
		case req.All == (len(req.IDs) > 0):
			return ForgetResult{}, fmt.Errorf("%w: give ids, or all, not both", ErrInvalidRequest)
		case req.All:
			rep, err := s.env.Forget(ctx, environment.ForgetOptions{Filter: vectorstore.Filter{Resource: res}, State: s.state})
			return ForgetResult{Records: len(rep.IDs), StateKeys: len(rep.StateKeys)}, err
		}
		var ids []string
		out := ForgetResult{}
		for _, id := range req.IDs {
			r, err := s.mem.Records.Get(ctx, id)
			switch {
			case errors.Is(err, vectorstore.ErrNotFound) || err == nil && r.Scope.Resource != res:
				out.NotFoundIDs++
			case err != nil:
				return out, err
			default:
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return out, nil
		}
		rep, err := s.env.Forget(ctx, environment.ForgetOptions{IDs: ids})
		out.Records = len(rep.IDs)
		return out, err
	})
}

// Fact is one fact of the temporal ledger.
type Fact struct {
	ID          string     `json:"id"`
	Subject     string     `json:"subject"`
	Predicate   string     `json:"predicate"`
	Value       string     `json:"value"`
	When        string     `json:"when,omitempty"`
	RecordedAt  time.Time  `json:"recorded_at"`
	ValidFrom   time.Time  `json:"valid_from"`
	ValidTo     *time.Time `json:"valid_to,omitempty"`
	CorrectedBy string     `json:"corrected_by,omitempty"`
}

func factOf(f temporal.Fact) Fact {
	out := Fact{ID: f.ID, Subject: f.Subject, Predicate: f.Predicate, Value: f.Value, When: f.When,
		RecordedAt: f.RecordedAt, ValidFrom: f.ValidFrom, CorrectedBy: f.CorrectedBy}
	if !f.ValidTo.IsZero() {
		t := f.ValidTo
		out.ValidTo = &t
	}
	return out
}

func factsOf(fs []temporal.Fact) []Fact {
	out := make([]Fact, 0, len(fs))
	for _, f := range fs {
		out = append(out, factOf(f))
	}
	return out
}

// FactsRequest records dated facts about a resource.
type FactsRequest struct {
	Resource string           `json:"resource,omitempty" jsonschema:"the resource the facts are about; may be left out when the key has one resource"`
	Thread   string           `json:"thread,omitempty" jsonschema:"the thread, when the ledger is kept per thread"`
	Facts    []temporal.Input `json:"facts" jsonschema:"the facts: subject, predicate, value and, if not now, when it became true"`
	// At is when the facts were stated (what When phrases resolve
	// against); zero means now.
	At time.Time `json:"at,omitzero" jsonschema:"when the facts were stated (RFC 3339); default now"`
}

// FactsResult says what the ledger did with them.
type FactsResult struct {
	Added      int    `json:"added"`
	Closed     int    `json:"closed"`
	Corrected  int    `json:"corrected"`
	Unchanged  int    `json:"unchanged"`
	Facts      []Fact `json:"facts"`
	Superseded []Fact `json:"superseded,omitempty"`
}

// RecordFacts writes facts through the temporal layer: relative dates
// resolved, an older fact with the same subject and predicate closed.
func (s *Server) RecordFacts(ctx context.Context, p *Principal, req FactsRequest) (FactsResult, error) {
	return op(s, func() (FactsResult, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return FactsResult{}, err
		}
		if len(req.Facts) == 0 {
			return FactsResult{}, fmt.Errorf("%w: no facts", ErrInvalidRequest)
		}
		r, err := s.facts.Put(ctx, vectorstore.Scope{Resource: res, Thread: req.Thread}, req.At, req.Facts...)
		if err != nil {
			return FactsResult{}, err
		}
		return FactsResult{Added: r.Added, Closed: r.Closed, Corrected: r.Corrected, Unchanged: r.Unchanged,
			Facts: factsOf(r.Facts), Superseded: factsOf(r.Superseded)}, nil
	})
}

// FactsQuery reads a resource's ledger.
type FactsQuery struct {
	Resource string `json:"resource,omitempty" jsonschema:"the resource; may be left out when the key has one resource"`
	Thread   string `json:"thread,omitempty" jsonschema:"the thread, when the ledger is kept per thread"`
	// AsOf, when set, keeps the facts that held then.
	AsOf time.Time `json:"as_of,omitzero" jsonschema:"only the facts that held at this time (RFC 3339); default every fact, closed ones included"`
}

// FactList is a resource's facts, by subject, predicate and date.
type FactList struct {
	Facts []Fact `json:"facts"`
}

// Facts lists a resource's facts.
func (s *Server) Facts(ctx context.Context, p *Principal, req FactsQuery) (FactList, error) {
	return op(s, func() (FactList, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return FactList{}, err
		}
		sc := vectorstore.Scope{Resource: res, Thread: req.Thread}
		var fs []temporal.Fact
		if req.AsOf.IsZero() {
			fs, err = s.facts.List(ctx, sc)
		} else {
			fs, err = s.facts.AsOf(ctx, sc, req.AsOf)
		}
		return FactList{Facts: factsOf(fs)}, err
	})
}

// Entity is one remembered entity.
type Entity struct {
	Name      string    `json:"name"`
	Type      string    `json:"type"`
	Notes     []string  `json:"notes,omitempty"`
	Mentions  int       `json:"mentions"`
	Priority  int       `json:"priority,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	Updated   time.Time `json:"updated"`
}

func entitiesOf(es []entity.Entity) []Entity {
	out := make([]Entity, 0, len(es))
	for _, e := range es {
		out = append(out, Entity{Name: e.Name, Type: string(e.Type), Notes: e.Notes, Mentions: e.Mentions,
			Priority: e.Priority, FirstSeen: e.FirstSeen, Updated: e.Updated})
	}
	return out
}

// EntitiesRequest adds or updates entities of a resource.
type EntitiesRequest struct {
	Resource string          `json:"resource,omitempty" jsonschema:"the resource; may be left out when the key has one resource"`
	Thread   string          `json:"thread,omitempty" jsonschema:"the thread, when entities are kept per thread"`
	Entities []entity.Update `json:"entities" jsonschema:"entities to add or update: name, type (person, organization, place, concept, other), notes to add, optional priority"`
}

// EntitiesResult is the layer's summary and the resource's entities after
// the update.
type EntitiesResult struct {
	Summary  string   `json:"summary"`
	Entities []Entity `json:"entities"`
}

// UpdateEntities writes entities through the entity layer: merged by
// normalised name and type, notes deduplicated and bounded.
func (s *Server) UpdateEntities(ctx context.Context, p *Principal, req EntitiesRequest) (EntitiesResult, error) {
	return op(s, func() (EntitiesResult, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return EntitiesResult{}, err
		}
		if len(req.Entities) == 0 {
			return EntitiesResult{}, fmt.Errorf("%w: no entities", ErrInvalidRequest)
		}
		sc := vectorstore.Scope{Resource: res, Thread: req.Thread}
		sum, err := s.ents.Put(ctx, sc, req.Entities...)
		if err != nil {
			return EntitiesResult{}, err
		}
		es, err := s.ents.List(ctx, sc)
		return EntitiesResult{Summary: sum, Entities: entitiesOf(es)}, err
	})
}

// EntitiesQuery reads a resource's entities.
type EntitiesQuery struct {
	Resource string `json:"resource,omitempty" jsonschema:"the resource; may be left out when the key has one resource"`
	Thread   string `json:"thread,omitempty" jsonschema:"the thread, when entities are kept per thread"`
}

// EntityList is a resource's entities, in the order first seen.
type EntityList struct {
	Entities []Entity `json:"entities"`
}

// Entities lists a resource's entities.
func (s *Server) Entities(ctx context.Context, p *Principal, req EntitiesQuery) (EntityList, error) {
	return op(s, func() (EntityList, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return EntityList{}, err
		}
		es, err := s.ents.List(ctx, vectorstore.Scope{Resource: res, Thread: req.Thread})
		return EntityList{Entities: entitiesOf(es)}, err
	})
}

// Note is one scratchpad entry.
type Note struct {
	Key     string    `json:"key"`
	Value   string    `json:"value"`
	Updated time.Time `json:"updated"`
}

// ScratchpadQuery reads scratchpad entries: a thread's with Thread, else
// the resource's.
type ScratchpadQuery struct {
	Resource string `json:"resource,omitempty" jsonschema:"the resource; may be left out when the key has one resource"`
	Thread   string `json:"thread,omitempty" jsonschema:"a thread's scratchpad instead of the resource's"`
	Key      string `json:"key,omitempty" jsonschema:"only this entry"`
}

// Notes are scratchpad entries, by key.
type Notes struct {
	Notes []Note `json:"notes"`
}

func (s *Server) pad(thread string) *scratchpad.Layer {
	if thread != "" {
		return s.padThr
	}
	return s.padRes
}

// Scratchpad reads scratchpad entries.
func (s *Server) Scratchpad(ctx context.Context, p *Principal, req ScratchpadQuery) (Notes, error) {
	return op(s, func() (Notes, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return Notes{}, err
		}
		ns, err := s.pad(req.Thread).List(ctx, vectorstore.Scope{Resource: res, Thread: req.Thread})
		if err != nil {
			return Notes{}, err
		}
		out := Notes{Notes: make([]Note, 0, len(ns))}
		for _, n := range ns {
			if req.Key == "" || n.Key == req.Key {
				out.Notes = append(out.Notes, Note{Key: n.Key, Value: n.Value, Updated: n.Updated})
			}
		}
		if req.Key != "" && len(out.Notes) == 0 {
			return Notes{}, fmt.Errorf("%w: no scratchpad entry %q", ErrNotFound, req.Key)
		}
		return out, nil
	})
}

// ScratchpadUpdate sets and deletes scratchpad entries.
type ScratchpadUpdate struct {
	Resource string            `json:"resource,omitempty" jsonschema:"the resource; may be left out when the key has one resource"`
	Thread   string            `json:"thread,omitempty" jsonschema:"a thread's scratchpad instead of the resource's"`
	Set      map[string]string `json:"set,omitempty" jsonschema:"entries to set, key to value (other keys stay)"`
	Delete   []string          `json:"delete,omitempty" jsonschema:"keys to delete"`
}

// ScratchpadResult is the layer's summary of the update.
type ScratchpadResult struct {
	Summary string `json:"summary"`
	Deleted int    `json:"deleted"`
}

// SetScratchpad sets, then deletes, scratchpad entries through the
// layer's update path (its key and size limits).
func (s *Server) SetScratchpad(ctx context.Context, p *Principal, req ScratchpadUpdate) (ScratchpadResult, error) {
	return op(s, func() (ScratchpadResult, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return ScratchpadResult{}, err
		}
		if len(req.Set) == 0 && len(req.Delete) == 0 {
			return ScratchpadResult{}, fmt.Errorf("%w: nothing to set or delete", ErrInvalidRequest)
		}
		pad, sc := s.pad(req.Thread), vectorstore.Scope{Resource: res, Thread: req.Thread}
		var out ScratchpadResult
		if len(req.Set) > 0 {
			if out.Summary, err = pad.Put(ctx, sc, req.Set); err != nil {
				return out, err
			}
		}
		if len(req.Delete) > 0 {
			if out.Deleted, err = pad.Delete(ctx, sc, req.Delete...); err != nil {
				return out, err
			}
			if out.Summary == "" {
				out.Summary = fmt.Sprintf("deleted %d of %d keys", out.Deleted, len(req.Delete))
			}
		}
		return out, nil
	})
}

// Message is one conversation message to remember.
type Message struct {
	Role string `json:"role" jsonschema:"user or assistant"`
	Text string `json:"text"`
	// ID, when set, keys the message: putting it again keeps one record.
	ID string `json:"id,omitempty"`
}

// MessagesRequest adds messages to a thread's searchable history.
type MessagesRequest struct {
	Resource string    `json:"resource,omitempty"`
	Thread   string    `json:"thread"`
	Messages []Message `json:"messages"`
}

// MessagesResult counts what was stored.
type MessagesResult struct {
	Stored int `json:"stored"`
}

// AddMessages records messages through the semantic layer (embedded
// before the call returns), so that searches find them.
func (s *Server) AddMessages(ctx context.Context, p *Principal, req MessagesRequest) (MessagesResult, error) {
	return op(s, func() (MessagesResult, error) {
		res, err := resourceOf(p, req.Resource)
		if err != nil {
			return MessagesResult{}, err
		}
		if req.Thread == "" || len(req.Messages) == 0 {
			return MessagesResult{}, fmt.Errorf("%w: a thread and messages are needed", ErrInvalidRequest)
		}
		items := make([]core.Item, 0, len(req.Messages))
		for i, m := range req.Messages {
			role := core.Role(m.Role)
			if role != core.RoleUser && role != core.RoleAssistant {
				return MessagesResult{}, fmt.Errorf("%w: message %d: role %q is not user or assistant", ErrInvalidRequest, i, m.Role)
			}
			it := core.Message(role, m.Text)
			it.ID = m.ID
			items = append(items, it)
		}
		if err := s.recall.Put(ctx, vectorstore.Scope{Resource: res, Thread: req.Thread}, items...); err != nil {
			return MessagesResult{}, err
		}
		return MessagesResult{Stored: len(items)}, nil
	})
}

// StatsQuery asks for counts: of one resource, or, for an admin key with
// no resource, of the whole store.
type StatsQuery struct {
	Resource string `json:"resource,omitempty"`
}

// Stats are counts of memories and what the store is.
type Stats struct {
	Backend    string         `json:"backend"`
	Collection string         `json:"collection"`
	Embedder   string         `json:"embedder"`
	Dimension  int            `json:"dimension"`
	Distance   string         `json:"distance"`
	Resource   string         `json:"resource,omitempty"`
	Records    int            `json:"records"`
	ByLayer    map[string]int `json:"by_layer"`
	ByKind     map[string]int `json:"by_kind"`
	// ByScope counts by layer scope (thread, resource, global).
	ByScope   map[string]int `json:"by_scope"`
	Threads   int            `json:"threads"`
	Resources int            `json:"resources,omitempty"`
	// DataBytes sums the records' ids, text, metadata and vectors.
	DataBytes int64 `json:"data_bytes"`
	// Embeddings counts records by the model their "embedding" metadata
	// names (the semantic layer's records).
	Embeddings map[string]int `json:"embeddings,omitempty"`
}

// Stats counts memories by layer and kind, and the threads (and, for the
// whole store, resources) that hold them.
func (s *Server) Stats(ctx context.Context, p *Principal, req StatsQuery) (Stats, error) {
	return op(s, func() (Stats, error) {
		var f vectorstore.Filter
		if !(p.Admin() && req.Resource == "") {
			res, err := resourceOf(p, req.Resource)
			if err != nil {
				return Stats{}, err
			}
			f.Resource = res
		}
		info := s.mem.Records.Info()
		st := Stats{Backend: info.Driver, Collection: info.Name, Embedder: s.mem.Embedder.Model(), Dimension: info.Dimension,
			Distance: string(info.Distance), Resource: f.Resource, ByLayer: map[string]int{}, ByKind: map[string]int{},
			ByScope: map[string]int{}, Embeddings: map[string]int{}}
		threads, resources := map[string]bool{}, map[string]bool{}
		for r, err := range s.mem.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: vectorstore.MaxListLimit, WithVectors: true}) {
			if err != nil {
				return Stats{}, err
			}
			st.Records++
			st.ByLayer[r.Layer]++
			st.ByKind[r.Kind]++
			st.ByScope[string(scopeOf(&r))]++
			if m := r.Metadata[semantic.MetaEmbedding]; m != "" {
				st.Embeddings[m]++
			}
			st.DataBytes += int64(len(r.ID) + len(r.Text) + 4*len(r.Vector))
			for k, v := range r.Metadata {
				st.DataBytes += int64(len(k) + len(v))
			}
			if r.Scope.Thread != "" {
				threads[r.Scope.Resource+"\x00"+r.Scope.Thread] = true
			}
			if r.Scope.Resource != "" {
				resources[r.Scope.Resource] = true
			}
		}
		st.Threads = len(threads)
		if f.Resource == "" {
			st.Resources = len(resources)
		}
		return st, nil
	})
}

// StateKey names one value of layer state: of a resource, of one of its
// threads, or (admin keys only) global.
type StateKey struct {
	Resource string `json:"resource,omitempty"`
	Thread   string `json:"thread,omitempty"`
	// Global addresses the global scope instead (admin keys only).
	Global bool   `json:"global,omitempty"`
	Layer  string `json:"layer"`
	// Name is the value's name in the layer; "" means "state", the
	// runtime's.
	Name string `json:"name,omitempty"`
}

// StateValue is a stored value with its revision.
type StateValue struct {
	Key      storage.Key     `json:"key"`
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
	// Raw is the stored bytes as they are (base64 in JSON), when the
	// read asks for them (GET /v1/state/{layer}/{name}?raw=true): Value
	// turns a value that is not JSON into a JSON string, Raw keeps it
	// byte for byte, as an export must.
	Raw []byte `json:"raw,omitempty"`
}

// storageKey resolves k for p.
func (s *Server) storageKey(p *Principal, k StateKey, needLayer bool) (storage.Key, error) {
	if s.state == nil {
		return storage.Key{}, fmt.Errorf("%w: this store keeps no layer state", ErrNoState)
	}
	if needLayer && k.Layer == "" {
		return storage.Key{}, fmt.Errorf("%w: name a layer", ErrInvalidRequest)
	}
	name := k.Name
	if name == "" {
		name = "state"
	}
	if k.Global {
		if !p.Admin() {
			return storage.Key{}, fmt.Errorf("%w: key %q may not use global state", ErrForbidden, p.Name)
		}
		return storage.Key{Scope: "global", Layer: k.Layer, Name: name}, nil
	}
	res, err := resourceOf(p, k.Resource)
	if err != nil {
		return storage.Key{}, err
	}
	if k.Thread != "" {
		return storage.Key{Scope: "thread", ScopeID: storage.ThreadScopeID(res, k.Thread), Layer: k.Layer, Name: name}, nil
	}
	return storage.Key{Scope: "resource", ScopeID: res, Layer: k.Layer, Name: name}, nil
}

// GetState reads one value of layer state.
func (s *Server) GetState(ctx context.Context, p *Principal, k StateKey) (StateValue, error) {
	return s.getState(ctx, p, k, false)
}

// getState is GetState, with the stored bytes when raw is set.
func (s *Server) getState(ctx context.Context, p *Principal, k StateKey, raw bool) (StateValue, error) {
	return op(s, func() (StateValue, error) {
		key, err := s.storageKey(p, k, true)
		if err != nil {
			return StateValue{}, err
		}
		e, err := s.state.Get(ctx, key)
		if err != nil {
			return StateValue{}, fmt.Errorf("state %s: %w", key, err)
		}
		v := json.RawMessage(e.Value)
		if !json.Valid(v) {
			// Not JSON (a layer's own encoding): returned as a JSON string.
			b, _ := json.Marshal(string(e.Value))
			v = b
		}
		out := StateValue{Key: key, Value: v, Revision: e.Revision}
		if raw {
			out.Raw = e.Value
			if out.Raw == nil {
				out.Raw = []byte{}
			}
		}
		return out, nil
	})
}

// StatePut writes one value of layer state if its stored revision is
// Revision (0: the key must not exist).
type StatePut struct {
	StateKey
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

// PutState writes one value of layer state, compare-and-swap on its
// revision (ErrConflict when it moved on), and returns the new revision.
func (s *Server) PutState(ctx context.Context, p *Principal, req StatePut) (StateValue, error) {
	return op(s, func() (StateValue, error) {
		key, err := s.storageKey(p, req.StateKey, true)
		if err != nil {
			return StateValue{}, err
		}
		if len(req.Value) == 0 || !json.Valid(req.Value) {
			return StateValue{}, fmt.Errorf("%w: the value must be JSON", ErrInvalidRequest)
		}
		rev, err := s.state.Put(ctx, key, req.Value, req.Revision)
		if err != nil {
			return StateValue{}, fmt.Errorf("state %s: %w", key, err)
		}
		return StateValue{Key: key, Value: req.Value, Revision: rev}, nil
	})
}

// DeleteState deletes one value of layer state if its stored revision is
// revision.
func (s *Server) DeleteState(ctx context.Context, p *Principal, k StateKey, revision int64) error {
	_, err := op(s, func() (struct{}, error) {
		key, err := s.storageKey(p, k, true)
		if err != nil {
			return struct{}{}, err
		}
		if err := s.state.Delete(ctx, key, revision); err != nil {
			return struct{}{}, fmt.Errorf("state %s: %w", key, err)
		}
		return struct{}{}, nil
	})
	return err
}

// StateKeys are the keys of one scope.
type StateKeys struct {
	Keys []storage.Key `json:"keys"`
}

// ListState lists the keys of layer state of a resource, one of its
// threads, or (admin) the global scope; with neither Thread nor Global,
// the keys of every thread of the resource are listed too.
func (s *Server) ListState(ctx context.Context, p *Principal, k StateKey) (StateKeys, error) {
	return op(s, func() (StateKeys, error) {
		key, err := s.storageKey(p, k, false)
		if err != nil {
			return StateKeys{}, err
		}
		l, ok := s.state.(storage.Lister)
		if !ok {
			return StateKeys{}, fmt.Errorf("%w: the state store cannot list keys", ErrNoState)
		}
		keys, err := l.Keys(ctx, key.Scope, key.ScopeID)
		if err != nil {
			return StateKeys{}, err
		}
		if key.Scope == "resource" {
			sl, ok := s.state.(storage.ScopeLister)
			if ok {
				ids, err := sl.ScopeIDs(ctx, "thread", storage.ThreadScopeID(key.ScopeID, ""))
				if err != nil {
					return StateKeys{}, err
				}
				for _, id := range ids {
					ks, err := l.Keys(ctx, "thread", id)
					if err != nil {
						return StateKeys{}, err
					}
					keys = append(keys, ks...)
				}
			}
		}
		if k.Layer != "" {
			keys = slices.DeleteFunc(keys, func(x storage.Key) bool { return x.Layer != k.Layer })
		}
		return StateKeys{Keys: keys}, nil
	})
}

// AssemblyQuery names a thread of a resource and, optionally, one of its
// recorded turns.
type AssemblyQuery struct {
	Resource string `json:"resource,omitempty"`
	Thread   string `json:"thread"`
	// Turn is the thread's assembly turn to read; 0 means the newest.
	Turn int `json:"turn,omitempty"`
}

func (s *Server) assemblyScope(p *Principal, req AssemblyQuery) (string, error) {
	if s.state == nil {
		return "", fmt.Errorf("%w: this store keeps no recorded assemblies", ErrNoState)
	}
	res, err := resourceOf(p, req.Resource)
	if err != nil {
		return "", err
	}
	if req.Thread == "" {
		return "", fmt.Errorf("%w: name a thread", ErrInvalidRequest)
	}
	return res, nil
}

// Assembly returns a recorded assembly of a thread of the resource
// (core.Config.RecordAssemblies): what the model was sent, band by band,
// with its plan and usage report; the newest unless the query names a
// turn.
func (s *Server) Assembly(ctx context.Context, p *Principal, req AssemblyQuery) (*inspect.Plan, error) {
	return op(s, func() (*inspect.Plan, error) {
		res, err := s.assemblyScope(p, req)
		if err != nil {
			return nil, err
		}
		var rec *inspect.Plan
		if req.Turn > 0 {
			rec, err = inspect.ReadAssembly(ctx, s.state, res, req.Thread, req.Turn)
		} else {
			rec, err = inspect.LatestAssembly(ctx, s.state, res, req.Thread)
		}
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: no recorded assembly of thread %q of resource %q (is RecordAssemblies on?)", ErrNotFound, req.Thread, res)
		}
		return rec, err
	})
}

// AssemblyList lists the recorded assemblies of a thread, oldest first.
type AssemblyList struct {
	Assemblies []inspect.AssemblySummary `json:"assemblies"`
}

// Assemblies lists the recorded assemblies of a thread of the resource.
func (s *Server) Assemblies(ctx context.Context, p *Principal, req AssemblyQuery) (AssemblyList, error) {
	return op(s, func() (AssemblyList, error) {
		res, err := s.assemblyScope(p, req)
		if err != nil {
			return AssemblyList{}, err
		}
		list, err := inspect.ListAssemblies(ctx, s.state, res, req.Thread)
		if errors.Is(err, storage.ErrNotFound) {
			return AssemblyList{}, fmt.Errorf("%w: no recorded assembly of thread %q of resource %q (is RecordAssemblies on?)", ErrNotFound, req.Thread, res)
		}
		return AssemblyList{Assemblies: list}, err
	})
}

// WhoAmI says what the key may use.
type WhoAmI struct {
	Name      string   `json:"name"`
	Admin     bool     `json:"admin"`
	Resources []string `json:"resources,omitempty"`
}

// Who describes p.
func Who(p *Principal) WhoAmI {
	return WhoAmI{Name: p.Name, Admin: p.Admin(), Resources: slices.Clone(p.Resources)}
}
