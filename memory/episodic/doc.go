// Package episodic is the episodic memory layer (slot core.SlotEpisodic,
// 300, resource scope): when a run completes, it summarises the run into an
// episode; later runs see the recent or the relevant episodes, so an agent
// keeps continuity across sessions without replaying whole logs.
//
// # Episodes
//
// On completion (Session.Complete) the layer's onComplete hook hands the
// run's log to a Summarizer and stores the summary as an episode: a
// vectorstore record of kind "episode" whose text is the summary, with
// metadata outcome, tokens (the summary's token count), run, thread, scope
// and seq (one more than the scope's highest when it was stored), and
// the store's clock (memory.Store.Now) as its time. Its id is derived from
// the layer, the scope and the run id, so completing a run twice cannot
// store it twice. Episodes are ordered by time, then seq, so episodes
// stored at one instant (a frozen or coarse clock) keep the order they were
// stored in. Past Options.MaxEpisodes (20 by default: a few weeks of daily
// sessions, a few thousand tokens of candidates) the oldest episodes of the scope are deleted. Episodes live in the store,
// so they survive process restarts and can be listed, edited or deleted
// with memctl; the runtime's scoped state holds nothing.
//
// Child runs (Session.Spawn) store no episode of their own: their work is
// part of the parent's log and so of the parent's episode. An empty
// summary stores nothing.
//
// # Summarizers
//
// Summarizer is a one-method interface, so any model client fits (wrap a
// function with SummarizerFunc). The default, ExtractiveSummarizer, needs
// no model: it copies the run's first (and last) user request, the names of
// the tools called and the start of the final assistant answer out of the
// log. It is extractive, not abstractive: it never paraphrases, infers or
// judges, and it is only as informative as those messages are. Plug in a
// model-backed Summarizer for real summaries.
//
// # Recall
//
// At init the layer loads its scope's episodes. Recall selects episodes
// within the allocated budget (core.Range(300, 2000) by default: room
// for a handful of summaries without crowding the history) in one of two modes:
//
//   - Recency (the default): newest first; an episode too large for what
//     is left is skipped and older ones still considered.
//   - Relevance: the latest user message of the run is embedded and the
//     scope's episodes are queried with it (vectorstore Query, filtered to
//     the layer, kind and scope); the most similar are taken first. Without
//     a user message, or if the query fails (logged), it falls back to
//     recency. The ranking is memoised per message, so the rounds of one
//     user turn query once.
//
// Whatever the mode, the selected episodes render in chronological order,
// each headed by its UTC time in ISO 8601 and its outcome:
//
//	<episodes>
//	[2025-03-01T09:00:00Z] (completed) Request: fix the flaky parser test
//	  Tools used: read_file ×2, run_tests
//	  Result: The test raced on a shared buffer; it now uses its own.
//	</episodes>
//
// The output is a function of the stored episodes (and, in relevance mode,
// of the message), never of the wall clock, so it renders the same bytes
// every turn.
//
// # Caching
//
// Episodes change only when a run completes, that is after the last
// assembly of the run that adds one. In recency mode the layer's output is
// therefore constant for a whole session and is declared anchor: it is
// pinned once and stays in the cached prefix. In relevance mode the
// selection follows the user's latest message, so the layer is left auto
// for the runtime to band by observed churn; a change is published with
// RenderDelta as just the episodes newly shown (episodes no longer shown
// are not retracted: they are still true).
package episodic
