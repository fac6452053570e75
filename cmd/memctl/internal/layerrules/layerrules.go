package layerrules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stratamem/strata/memory"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// Layer types: the default ids of strata's memory layers.
const (
	Episodic     = "episodic"
	Semantic     = "semantic"
	Entity       = "entity"
	Observations = "observations"
	Temporal     = "temporal"
	Scratchpad   = "scratchpad"
)

// Types lists the layer types, in the order memctl shows them.
var Types = []string{Episodic, Semantic, Entity, Observations, Temporal, Scratchpad}

// Limits memctl applies to what it writes.
const (
	// MaxTextBytes bounds a record's text (the layers' own bound on one
	// note, observation or fact value).
	MaxTextBytes = 8 << 10
	// MaxNameBytes bounds an entity name, a scratchpad key, a fact's
	// subject and predicate.
	MaxNameBytes = 256
)

// Layer scopes, as the "scope" metadata of episodic, entity and scratchpad
// records names them.
const (
	ScopeThread   = "thread"
	ScopeResource = "resource"
	ScopeGlobal   = "global"
)

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid memory")

// Error is a rule a record breaks. It wraps ErrInvalid.
type Error struct {
	Layer string // the layer type whose rule it is ("" for common rules)
	Field string // text, kind, scope, metadata.KEY, valid_to...
	Msg   string
}

func (e *Error) Error() string {
	s := "invalid memory"
	if e.Layer != "" {
		s += " for layer " + e.Layer
	}
	return s + ": " + e.Field + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

// Rule describes what a layer type reads back from its records.
type Rule struct {
	Type string
	// Kinds the layer writes; the first is the default for memctl add.
	Kinds []string
	// Scopes the layer can be configured with.
	Scopes []string
	// ScopeMeta is true when records carry their layer's scope in the
	// "scope" metadata and the layer filters on it.
	ScopeMeta bool
	// Doc says in a line what the layer needs.
	Doc string
}

var rules = map[string]Rule{
	Episodic: {Type: Episodic, Kinds: []string{"episode"}, Scopes: []string{ScopeThread, ScopeResource, ScopeGlobal}, ScopeMeta: true,
		Doc: "a run summary; metadata run (the run it summarises), outcome optional"},
	// A "context" record (a message with its neighbours) is derived: the
	// layer rewrites it when the messages around it change.
	// A resource-scoped semantic layer recalls from every thread of the
	// resource: its messages still belong to a thread, and carry both.
	Semantic: {Type: Semantic, Kinds: []string{"message", "context"}, Scopes: []string{ScopeThread, ScopeResource},
		Doc: "a conversation message; thread required (and the resource for a resource-scoped layer), metadata role user|assistant"},
	Entity: {Type: Entity, Kinds: []string{entity.KindEntity}, Scopes: []string{ScopeThread, ScopeResource, ScopeGlobal}, ScopeMeta: true,
		Doc: "a person, organization, place, concept or other; metadata name and type, the text holds the notes"},
	Observations: {Type: Observations, Kinds: []string{"observation"}, Scopes: []string{ScopeThread, ScopeResource},
		Doc: "a remembered fact; a thread (and its resource, if any) or a resource alone, metadata importance 1..5"},
	Temporal: {Type: Temporal, Kinds: []string{temporal.Kind, temporal.KindCorrected}, Scopes: []string{ScopeThread, ScopeResource},
		Doc: "a fact with validity; a thread (and its resource, if any) or a resource alone, metadata subject, predicate, value"},
	Scratchpad: {Type: Scratchpad, Kinds: []string{"note"}, Scopes: []string{ScopeThread, ScopeResource, ScopeGlobal}, ScopeMeta: true,
		Doc: "a working note; metadata key, the text is \"key: value\""},
}

// Lookup returns the rule of a layer type.
func Lookup(typ string) (Rule, bool) {
	r, ok := rules[typ]
	return r, ok
}

// ScopeOf returns the layer scope a record belongs to: its "scope"
// metadata when the type keeps one, else what its scope keys say.
func ScopeOf(typ string, r *vectorstore.Record) string {
	if rl, ok := rules[typ]; ok && rl.ScopeMeta {
		if s := r.Metadata["scope"]; s != "" {
			return s
		}
	}
	switch {
	case r.Scope.Thread != "":
		return ScopeThread
	case r.Scope.Resource != "":
		return ScopeResource
	}
	return ScopeGlobal
}

// Prepare brings a record into the shape its layer type reads back,
// deriving what the layer derives, so an operator edits the meaningful
// parts only. old is the record before an edit, nil for a new one.
//
//   - entity: text "Name (type): notes" from metadata name and type (a
//     text without that prefix is taken as the notes; the prefix of the
//     old name and type is replaced), type canonical;
//   - scratchpad: text "key: value" from metadata key (a text without the
//     prefix is taken as the value; the old key's prefix is replaced);
//   - temporal: text "subject predicate: value" and the chain keys
//     subject_key and predicate_key, from metadata subject, predicate and
//     value (unless the text itself was changed: that is Check's to
//     refuse, the value is edited in the metadata);
//   - episodic, entity, scratchpad: metadata scope from the scope keys
//     when missing;
//   - when the text changed, metadata derived from the old text is
//     dropped: episodic tokens (the layer recounts), semantic truncated.
//
// Unknown types are left alone.
func Prepare(typ string, r *vectorstore.Record, old *vectorstore.Record) {
	rl, ok := rules[typ]
	if !ok {
		return
	}
	textChanged := old == nil || old.Text != r.Text
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	md := r.Metadata
	if rl.ScopeMeta && md["scope"] == "" {
		md["scope"] = ScopeOf(typ, r)
	}
	if r.Kind == "" {
		r.Kind = rl.Kinds[0]
	}
	switch typ {
	case Episodic:
		if textChanged {
			delete(md, "tokens")
		}
	case Semantic:
		if textChanged {
			delete(md, "truncated")
		}
	case Entity:
		if t, ok := entity.ParseType(md["type"]); ok {
			md["type"] = string(t)
		}
		name := strings.Join(strings.Fields(md["name"]), " ")
		if name == "" {
			break
		}
		md["name"] = name
		prefix := name + " (" + md["type"] + ")"
		if r.Text == prefix || strings.HasPrefix(r.Text, prefix+": ") {
			break
		}
		notes := r.Text
		if old != nil {
			oldPrefix := strings.Join(strings.Fields(old.Metadata["name"]), " ") + " (" + old.Metadata["type"] + ")"
			if notes == oldPrefix {
				notes = ""
			} else {
				notes = strings.TrimPrefix(notes, oldPrefix+": ")
			}
		}
		if notes = strings.TrimSpace(notes); notes != "" {
			r.Text = prefix + ": " + notes
		} else {
			r.Text = prefix
		}
	case Scratchpad:
		key := strings.TrimSpace(md["key"])
		if key == "" || r.Text == key+":" || strings.HasPrefix(r.Text, key+": ") {
			break
		}
		md["key"] = key
		value := r.Text
		if old != nil {
			if ok := strings.TrimSpace(old.Metadata["key"]); ok != "" {
				if value == ok+":" {
					value = ""
				} else {
					value = strings.TrimPrefix(value, ok+": ")
				}
			}
		}
		r.Text = key + ": " + value
	case Temporal:
		if md[temporal.MetaSubject] != "" && md[temporal.MetaPredicate] != "" && md[temporal.MetaValue] != "" {
			md[temporal.MetaSubjectKey] = temporal.SubjectKey(md[temporal.MetaSubject])
			md[temporal.MetaPredicateKey] = temporal.PredicateKey(md[temporal.MetaPredicate])
			if !textChanged || old == nil {
				r.Text = md[temporal.MetaSubject] + " " + md[temporal.MetaPredicate] + ": " + md[temporal.MetaValue]
			}
		}
	}
}

// Check validates a record against the common rules and those of its
// layer type. It does not modify r; call Prepare first.
//
// Common rules: a known layer type, a kind the layer writes, text that is
// not blank and at most MaxTextBytes of valid UTF-8 without NUL bytes,
// metadata keys [A-Za-z_][A-Za-z0-9_-]{0,63} with values of valid UTF-8
// without NUL, valid_to after valid_from. Then per layer: the scope the
// layer can read (see Rule.Scopes and Rule.ScopeMeta) and the metadata
// it needs (see each Rule's Doc).
func Check(typ string, r *vectorstore.Record) error {
	rl, ok := rules[typ]
	if !ok {
		return &Error{Field: "layer", Msg: fmt.Sprintf("unknown layer type %q (known: %s)", typ, strings.Join(Types, ", "))}
	}
	bad := func(field, format string, args ...any) error {
		return &Error{Layer: typ, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if r.Layer == "" {
		return bad("layer", "empty")
	}
	if !slices.Contains(rl.Kinds, r.Kind) {
		return bad("kind", "%q is not a kind this layer reads (want %s)", r.Kind, strings.Join(rl.Kinds, " or "))
	}
	if strings.TrimSpace(r.Text) == "" {
		return bad("text", "empty")
	}
	if len(r.Text) > MaxTextBytes {
		return bad("text", "%d bytes, at most %d", len(r.Text), MaxTextBytes)
	}
	if err := cleanString(r.Text); err != "" {
		return bad("text", "%s", err)
	}
	for _, f := range []struct{ name, v string }{{"scope.thread", r.Scope.Thread}, {"scope.resource", r.Scope.Resource}, {"kind", r.Kind}, {"layer", r.Layer}} {
		if err := cleanString(f.v); err != "" {
			return bad(f.name, "%s", err)
		}
		if len(f.v) > vectorstore.MaxFieldBytes {
			return bad(f.name, "longer than %d bytes", vectorstore.MaxFieldBytes)
		}
	}
	if len(r.Metadata) > vectorstore.MaxMetadataEntries {
		return bad("metadata", "more than %d entries", vectorstore.MaxMetadataEntries)
	}
	for _, k := range slices.Sorted(mapKeys(r.Metadata)) {
		if !vectorstore.ValidMetadataKey(k) {
			return bad("metadata", "invalid key %q (want [A-Za-z_][A-Za-z0-9_-]{0,63})", k)
		}
		v := r.Metadata[k]
		if err := cleanString(v); err != "" {
			return bad("metadata."+k, "%s", err)
		}
		if len(v) > vectorstore.MaxMetadataValue {
			return bad("metadata."+k, "longer than %d bytes", vectorstore.MaxMetadataValue)
		}
	}
	if !r.ValidFrom.IsZero() && !r.ValidTo.IsZero() && !r.ValidTo.After(r.ValidFrom) {
		return bad("valid_to", "%s is not after valid_from %s", r.ValidTo.Format(time.RFC3339), r.ValidFrom.Format(time.RFC3339))
	}
	if err := checkScope(rl, r); err != nil {
		return err
	}
	md := r.Metadata
	intIn := func(key string, lo, hi int) error {
		v, ok := md[key]
		if !ok {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			if hi == int(^uint(0)>>1) {
				return bad("metadata."+key, "%q is not an integer >= %d", v, lo)
			}
			return bad("metadata."+key, "%q is not an integer in %d..%d", v, lo, hi)
		}
		return nil
	}
	timeKey := func(key string) error {
		v, ok := md[key]
		if !ok {
			return nil
		}
		if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			return bad("metadata."+key, "%q is not an RFC 3339 time", v)
		}
		return nil
	}
	name := func(key string) error {
		v := strings.TrimSpace(md[key])
		switch {
		case v == "":
			return bad("metadata."+key, "required")
		case len(v) > MaxNameBytes:
			return bad("metadata."+key, "%d bytes, at most %d", len(v), MaxNameBytes)
		}
		for _, c := range v {
			if unicode.IsControl(c) {
				return bad("metadata."+key, "contains a control character")
			}
		}
		return nil
	}
	const anyInt = int(^uint(0) >> 1)
	var errs []error
	switch typ {
	case Episodic:
		errs = append(errs, intIn("tokens", 0, anyInt))
	case Semantic:
		if role := md["role"]; role != "user" && role != "assistant" {
			errs = append(errs, bad("metadata.role", "%q: want user or assistant", role))
		}
		errs = append(errs, intIn("seq", 0, anyInt))
	case Entity:
		errs = append(errs, name("name"))
		if _, ok := entity.ParseType(md["type"]); !ok {
			errs = append(errs, bad("metadata.type", "%q: want person, organization, place, concept or other", md["type"]))
		}
		errs = append(errs, intIn("mentions", 1, anyInt), intIn("priority", 0, entity.MaxPriority), timeKey("first_seen"), timeKey("updated"))
	case Observations:
		errs = append(errs, intIn("importance", 1, 5), intIn("mentions", 1, anyInt), timeKey("last_seen"), jsonStrings(typ, md, "sources"))
	case Temporal:
		errs = append(errs, name(temporal.MetaSubject), name(temporal.MetaPredicate))
		if strings.TrimSpace(md[temporal.MetaValue]) == "" {
			errs = append(errs, bad("metadata."+temporal.MetaValue, "required"))
		}
		errs = append(errs, timeKey(temporal.MetaRecordedAt), timeKey(temporal.MetaRefersTo), jsonStrings(typ, md, temporal.MetaSources))
		if want := md[temporal.MetaSubject] + " " + md[temporal.MetaPredicate] + ": " + md[temporal.MetaValue]; r.Text != want {
			errs = append(errs, bad("text", "is derived from subject, predicate and value (%q); change those with --meta", want))
		}
	case Scratchpad:
		errs = append(errs, name("key"))
		if k := md["key"]; k != "" && r.Text != k+":" && !strings.HasPrefix(r.Text, k+": ") {
			errs = append(errs, bad("text", "must start with %q", k+": "))
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkScope(rl Rule, r *vectorstore.Record) error {
	bad := func(format string, args ...any) error {
		return &Error{Layer: rl.Type, Field: "scope", Msg: fmt.Sprintf(format, args...)}
	}
	th, res := r.Scope.Thread, r.Scope.Resource
	switch rl.Type {
	case Semantic:
		if th == "" {
			return bad("a message belongs to a thread (give --thread)")
		}
		return nil
	case Observations, Temporal:
		// Thread-scoped: a thread, with the resource it belongs to if
		// any; resource-scoped: a resource alone.
		if th == "" && res == "" {
			return bad("give a thread (with its resource, if any) or a resource (the layer is thread- or resource-scoped)")
		}
		return nil
	}
	s := r.Metadata["scope"]
	switch s {
	case ScopeThread:
		if th == "" {
			return bad("scope thread needs a thread")
		}
	case ScopeResource:
		if res == "" || th != "" {
			return bad("scope resource needs a resource and no thread")
		}
	case ScopeGlobal:
		if th != "" || res != "" {
			return bad("scope global takes no thread or resource")
		}
	default:
		return &Error{Layer: rl.Type, Field: "metadata.scope", Msg: fmt.Sprintf("%q: want thread, resource or global", s)}
	}
	return nil
}

func jsonStrings(typ string, md map[string]string, key string) error {
	v, ok := md[key]
	if !ok {
		return nil
	}
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return &Error{Layer: typ, Field: "metadata." + key, Msg: "must be a JSON array of strings"}
	}
	return nil
}

func cleanString(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL byte"
	}
	return ""
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ScopeKey is the scope part of the ids of episodic, entity and
// scratchpad records: "thread\x00T", "resource\x00R" or "global".
func ScopeKey(scope string, s vectorstore.Scope) string {
	return memory.ScopeKey(scope, s)
}

// EpisodeID is the id the episodic layer gives the episode of a run.
func EpisodeID(layer, scopeKey, run string) string {
	h := sha256.Sum256([]byte(layer + "\x00" + scopeKey + "\x00" + run))
	return "episode-" + hex.EncodeToString(h[:20])
}

// MessageID is the id the semantic layer gives a message item with an id.
func MessageID(layer string, s vectorstore.Scope, itemID string) string {
	h := sha256.New()
	w := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	w(layer)
	w(s.Thread)
	w(s.Resource)
	w("item")
	w(itemID)
	return layer + ":" + hex.EncodeToString(h.Sum(nil))[:40]
}
