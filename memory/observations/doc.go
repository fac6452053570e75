// Package observations is a memory layer of facts observed in a
// conversation ("User is allergic to peanuts", "User works at Acme"),
// rendered at slot 200 (core.SlotObservations) for every later turn.
//
// Add it in one line:
//
//	obs, err := observations.New(store, observations.Options{})
//	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{obs}})
//
// # Two write paths
//
// After every model call the store hook hands the new items to an
// Extractor. The default, Rules, is pattern-based and says so: it turns
// plain first-person statements in user messages ("I work at Acme", "my
// favourite colour is blue") into third-person observations and misses
// everything else. Plug in a model-backed Extractor (any client; the
// interface is one method) for real extraction, or set DisableExtraction.
//
// The model writes too, through the provided function
// "observations/record" {observations: [{text, importance 1-5}]}. It is
// applied only when the host routes the call (Session.ExecuteTool), which the usual loop does after asking the
// steering layers (Session.BeforeToolCall), and the call's output is what
// the write did ("Recorded 2 observation(s): 2 new, ..."). Recording the
// call with Session.Record applies nothing, because the store hook runs
// before anyone is asked: a steering layer that denies the call must leave
// memory unchanged, so the store hook neither applies record calls nor
// hands them (or their outputs) to the extractor. The call id is
// remembered in the layer state, so a replayed call id is answered with
// the first application's output (or, from an earlier session, a note
// that it was applied already) and writes nothing. Bad arguments (invalid
// JSON, wrong types, missing or unknown fields, empty or over-long texts,
// importance outside 1..5, more than 100 observations, more than 256 KiB)
// are rejected with a *core.ArgumentError the model reads, and nothing is
// written.
//
// # Records
//
// Every observation is a vectorstore record: Layer = the layer id, Kind
// "observation", Scope = the thread (default) or the resource (Options.
// Scope), Text, the embedding of Text, CreatedAt, and metadata
// "importance" (1-5), "sources" (JSON array of the ids of the items it came
// from: an item's ID, else "<runID>:<log index>", or
// "<runID>:call:<callID>" for a record call), "last_seen", "mentions" and
// "origin". Record ids are deterministic in layer, scope and text, so a
// replayed write is idempotent. The records are the memory: memctl can
// list, edit, delete and re-embed them; a session mirrors its scope's
// records at init and renders from the mirror.
//
// # Near-duplicates
//
// A new observation is compared with its scope before it is written: an
// exact restatement (same text up to case, spacing and final punctuation)
// matches by id; otherwise the nearest stored record (vector query, top 1,
// within the scope) and the observations staged by the same write are
// scored by cosine similarity, and one at or above MergeThreshold
// (default 0.92) absorbs the newcomer instead of a new record being
// written: the older id and creation time are kept, the newer wording
// wins, sources are unioned, last-seen moves to now, and a restatement
// from a new source bumps importance by one (capped at 5).
//
// Why 0.92 and why the newer wording wins, measured on the default
// offline model (embed/uselite): restatements of one fact score 0.88-0.97
// ("likes" / "loves green tea" 0.941, "is a vegetarian" / "is vegetarian"
// 0.967, "dog is called" / "named Rex" 0.932, but "works at Acme" / "at
// Acme Corp" 0.914 and "The user likes" / "User likes" 0.885); distinct
// facts in the same frame score 0.40-0.88 ("lives in Berlin" / "in Paris"
// 0.771, "likes tea" / "likes coffee" 0.813, "drives a Toyota" / "a Honda"
// 0.861, "wife is Anna" / "sister is Anna" 0.879). 0.92 sits above every
// distinct pair measured, at the price of leaving the lower restatements
// as a second line: a missed merge costs a duplicate line, a wrong merge
// loses a fact. One attribute with a new value also scores high ("is 34"
// / "is 35 years old" 0.977, "favourite colour is blue" / "green" 0.955)
// and merges; that is why the newcomer's text replaces the old one rather
// than being dropped: the merge is an update. Raise the threshold to merge
// less, up to 1 for exact restatements only; with a model-backed
// embedder, measure its scores the same way (quality_test.go does it for
// the default model). Texts are normalised before they are embedded,
// since the model scores "X." against "X" at only 0.91 and is case
// sensitive ("Berlin" / "berlin" 0.81); such restatements match exactly,
// by record id, without the embedding.
//
// # Rendering and the prompt cache
//
// Recall renders one developer message, observations ordered by
// importance, then last seen, then creation time, then id, each as
// "- [importance] text (YYYY-MM-DD last seen)", fitted to the layer's
// token budget in that priority order (the rest are counted in a closing
// line). The bytes depend only on the records; no clock is read.
//
// Placement defaults to auto: how often observations change is a property
// of the workload, not of the layer. A chatty personal assistant learns
// something most turns (the runtime's churn measure then moves the layer
// live, after history, where changes cost nothing); a task agent learns a
// fact now and then (the layer stays anchored before history and its
// drift is published as a context update). Set PlacementAnchor when you
// know writes are rare. For the anchored case the layer has a renderDelta:
// the update lists only the new or changed lines and the ones no longer
// listed, so one new fact costs one line, not the whole block.
//
// # Concurrency
//
// Sessions of different threads (resources) never read each other's
// records: every read filters on the layer and the scope. Two sessions of
// one thread may merge into the same record concurrently; the last write
// wins for that record, and the applied-call list in the state is merged
// on a compare-and-swap conflict.
package observations
