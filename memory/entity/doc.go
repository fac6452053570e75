// Package entity is the entity memory layer (slot core.SlotEntity, 150): the
// people, organisations, places and concepts the model met, with what it
// learned about each, shown to it on every turn.
//
// # Writing
//
// The model records entities with the provided function "entity/update"
// (the layer id, then "/update"), or with the plain function call
// "updateEntities" (Options.CallName), a plain function (core.Function.Plain)
// the runtime applies. Both take the same arguments:
//
//	{"entities": [{"name": "Ada Lovelace", "type": "person",
//	               "notes": ["mathematician", "wrote the first program"]}]}
//
// "notes" may also be one string (the form prompts written for the plain
// call use), and "note" adds one
// more. "type" is person, organization (or organisation), place (or
// location), concept or other. An optional "priority" from 0 to 10 ranks an
// entity above others when not all fit.
//
// Entities merge by normalised name and type: the name is NFKC-normalised,
// case-folded, trimmed and its spaces collapsed, so "ada  LOVELACE" updates
// "Ada Lovelace"; the first spelling seen is the one shown. Notes
// accumulate without duplicates (compared the same way, ignoring a final
// full stop); a note holding "; " is split there, since that is the
// separator the record's text uses. Each entity keeps its newest
// Options.MaxNotes notes. Every update that names an entity counts as a
// mention.
//
// Bad arguments (invalid JSON, wrong types, a missing or empty name, an
// unknown type, more than 100 entities, a note over 8 KiB, a priority out
// of range) are rejected whole with a *core.ArgumentError whose message
// says what to fix; nothing is written.
//
// Each call has one write path. "entity/update" is applied only when the
// host routes it (Session.ExecuteTool), which the
// usual loop does after the steering layers' BeforeToolCall: a layer that
// denies the call leaves the entities unchanged, and the routed call's
// output is the result of applying it ("ok: recorded 2 entities: ...") or
// the rejection. Recording the call (Session.Record) does not apply it,
// since it is recorded before anyone is asked. The plain
// "updateEntities" is a pseudo-tool: it is not offered as a tool, and the
// runtime applies it as it does any plain function (core.Function.Plain).
// When no layer of the runtime can deny a call (none has a BeforeToolCall
// hook) it is applied as it is recorded (unless it was recorded with its
// function_call_output, i.e. the host answered it), and a rejected call is
// a diagnostic. When one can, the runtime holds it until the host routes
// it (BeforeToolCall, then ExecuteTool, which answers "ok: applied by"
// and the layer id, or the error): a denied call writes nothing. Options.FunctionOnly
// turns it off, leaving the routed function as the only write path. Either way a call id is applied at most
// once per session: a replay is answered with the first application's
// output and writes nothing.
//
// # Storage
//
// One vectorstore record per entity, kind "entity", text
// "Name (type): note; note", metadata name, type, mentions, priority,
// first_seen, updated and scope, with an id derived from the layer, the
// scope, the type and the normalised name. The record's time is that of
// its last write. At init the scope's entities are
// loaded into an in-memory mirror that recall renders from; writes update
// records and mirror together. The records are the memory (the runtime's
// scoped state holds nothing), so an entity edited or deleted with memctl
// is what the next run sees. Scope is thread by default; ScopeResource
// shares the entities across a user's threads.
//
// # Concurrent sessions
//
// Several sessions may share a scope (ScopeResource, ScopeGlobal, or one
// thread resumed twice). A write does not start from the session's mirror,
// which is as old as the session: it re-reads the scope's records, applies
// the update to each entity as the store holds it, writes the named
// entities' records whole and replaces the mirror with that fresh view. So
// the notes, mentions, priority and first spelling another session
// recorded since are kept, the writer sees them from then on, and
// Options.MaxEntities is enforced against the store's entities. An entity
// deleted from the store since (memctl, or another session's eviction) is
// recorded anew rather than resurrected from the mirror. Records made from
// outside for one entity under other ids are merged into its own record,
// and the others deleted, when it is next written. Other sessions' writes
// reach a session's rendering at its next write or its next run, not in
// between.
//
// Writes through one layer value (the sessions of one Runtime) are
// serialised, so none is lost. The store offers no compare-and-swap, so
// two processes writing the same entity at the same instant may still
// lose one of the two updates (the one whose read preceded the other's
// write); each call is still applied whole or not at all.
//
// # Rendering and caching
//
// The entities render as one developer message, one "- Name (type): notes"
// line each, in the order they were first seen. When they do not all fit
// the budget the layer keeps them by priority, then mentions, then most
// recently updated (then name, for determinism), and says how many it left
// out. An entity whose notes alone overflow the budget shows its newest
// notes.
//
// Placement is auto: how often entities change depends on the
// conversation. While anchored, a change is published with RenderDelta as
// just the entities whose line changed or appeared.
package entity
