// Package temporal is a memory layer that keeps a timestamped fact
// ledger: facts with a subject, a predicate and a value ("alice · city:
// Berlin"), the time they refer to, the time they were recorded, and a
// validity period. A newer fact with the same subject and predicate closes
// the older one instead of deleting it, so the ledger answers "what was
// true on date D" as well as "what is true now".
//
// Add it in one line:
//
//	ledger, err := temporal.New(store, temporal.Options{})
//	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{ledger}})
//
// # Writing facts
//
// The model writes through the provided function "temporal/record"
// {facts: [{subject, predicate, value, when?}]}. It is applied only when
// the host routes the call (Session.ExecuteTool),
// which the usual loop does after asking the steering layers
// (Session.BeforeToolCall), and the call's output is what the write did
// ("Recorded 2 fact(s): ..."). Recording the call with Session.Record
// applies nothing, because the store hook runs before anyone is asked: a
// steering layer that denies the call must leave the ledger unchanged, so
// the store hook neither applies record calls nor hands them to the
// extractor. The call id is remembered in the layer state, so a replayed
// call id is answered with the first application's output (or, from an
// earlier session, a note that it was applied already) and writes
// nothing. An optional Extractor reads the conversation after each model
// call; Patterns is an offline, pattern-based one (a few first-person
// statements such as "I moved to Berlin last Friday"), honest about being
// nothing more. Layer.Put is the Go API over the same path. Bad
// arguments (invalid JSON, wrong types, missing or unknown fields, empty
// or over-long fields, a when the parser does not know, more than 100
// facts, more than 256 KiB) are rejected with a *core.ArgumentError that
// tells the model what was wrong, and nothing is written.
//
// "when" is resolved by ParseWhen against the message's timestamp: the
// store clock (memory.Store.Now) when the item was recorded, or, for a
// record call, when the host routed it. "yesterday", "last Friday", "two weeks ago",
// "on November 20", "2026-11-20" all mean the start of that day in
// Options.Location. A fact without when is valid from the instant it was
// recorded. A when outside years 1..9999 is refused like any phrase the
// parser does not know. A record call is all or nothing: one bad fact
// rejects the call and none of its facts is written. Extracted facts are
// taken one by one: one whose when does not resolve at its message's time
// (Patterns splits "on February 29" off, which has no date in 2026) is
// kept, valid from the message, with the phrase back in its value ("Berlin
// on February 29"); an otherwise malformed one is dropped.
//
// # The chain of a fact
//
// Facts with the same normalised subject and predicate (case, spacing,
// '_' and '-' ignored; "I", "me" and "the user" are "user") form a chain
// ordered by ValidFrom. A new fact is placed in its chain: the fact valid
// at its ValidFrom is closed there (its ValidTo is set, the record
// upserted, never deleted), and the new fact stays valid until the next
// fact's ValidFrom, so a backdated or backfilled fact slots in without
// disturbing later history. A fact with the same ValidFrom as an existing
// one corrects it: the old record is kept, as kind "fact_corrected", and
// no as-of query returns it. A fact whose value is the one already valid then is a
// restatement and changes nothing; record ids are deterministic in chain,
// value and ValidFrom, so replays are idempotent.
//
// Each fact is a vectorstore record: Kind "fact", Text "subject
// predicate: value" (embedded), Scope the thread (default) or resource,
// ValidFrom and ValidTo in the record's own fields, and metadata subject,
// predicate, value, subject_key, predicate_key, when, refers_to,
// recorded_at, sources and origin. AsOf queries the collection with
// Filter.ValidAt, and the provided function "temporal/as_of" {date}
// answers the model with the facts valid at the end of that day (a date,
// a phrase such as "last Friday", or an RFC 3339 instant).
//
// # Relative times and the prompt cache
//
// Recall renders the facts current today, newest first, one line each:
//
//	<temporal_facts today="2026-11-30" weekday="Monday">
//	...
//	- [2026-11-27 · 3 days ago] user · lives in: Berlin (before: Paris)
//
// with the scheduled ones (valid from a later day) after them. "Current"
// is decided by the calendar day in Options.Location, as the as_of
// function reads a date: the facts that hold at the end of today. So a
// fact that becomes true at 15:00 today (a "when" with a time of day, or
// one recorded at 15:00) is shown as today's, with the value it replaces
// as "before", from the first turn of the day, rather than moving from
// Scheduled to current at 15:00. The instants themselves are exact in the
// ledger: AsOf and an RFC 3339 as_of answer them. "3 days
// ago" read against a moving clock would change the bytes as time passes
// and churn the prompt cache; the decision here is to render relative
// times at day granularity, counted in calendar days from a "today" that
// the block states in its header (today="2026-11-30"), so the rendered
// bytes are a function of the facts and of the calendar date only. The
// layer is anchored by default: within a day every turn re-sends the same
// bytes (the tests assert it) and the prefix behind it stays cached. A
// new fact drifts the block; so does midnight. Either is published by the
// renderDelta as a short context update, not a rewrite of the prefix:
// the new or changed lines only, and for a date change one sentence
// ("Today is now 2026-12-01 ... each is 1 day older; their dates are
// exact"), because every line also carries its exact ISO date. In
// practice the first turn of a new day usually follows a pause longer
// than the provider's cache lifetime: the host tells the runtime the cache
// is cold (agent.Agent does by default, see core.Session.ExpectColdCache),
// the epoch re-anchors on that request, and the daily change costs
// nothing beyond the write the expired cache costs anyway. Measured on the
// cache benchmark's temporal-days workload (benchmarks/results/
// cache-stability.md): after an overnight pause the request following the
// resumption reads all but 386 of 44,084 tokens; before the host signal
// existed, the runtime re-anchored on the reported miss and that request
// wrote all 44,084 again. Options.Location
// says whose midnight it is. The alternative, absolute dates only with a
// live "today is" line, would leave the model to do the date arithmetic
// the issue asks the ledger to do for it.
//
// # Concurrency
//
// Every read filters on the layer id and the scope, so a thread or
// resource never sees another's facts. Each write reads its chains from
// the store, not from the session's mirror, so two sessions of one scope
// see each other's earlier facts when they write; two writes to one chain
// at the same moment are not serialised (the later upsert wins for a
// record they both touch).
package temporal
