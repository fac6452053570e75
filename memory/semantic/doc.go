// Package semantic is strata's semantic-recall layer: it records every
// user and assistant message of a thread as a record in a vectorstore
// collection and, each turn, recalls the earlier messages most related to
// the latest user message, with their neighbours and dates, skipping what
// the model already sees in its history window.
//
// Add it in one line:
//
//	l, err := semantic.New(store, semantic.Options{})
//	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l.Layer()}})
//
// # Records
//
// Each message is one vectorstore.Record of Kind "message": Layer the
// layer id, Scope the run's thread and resource, Text the message,
// CreatedAt the store clock's time, Vector the embedding of Text, and
// metadata role, seq (orders the thread's messages within one
// microsecond), run, item_id (the item's own id, when it had one) and
// embedding (see below). Record ids are deterministic: from the item id
// when the item has one, so a host that appends the same message again
// writes the same record, else from the run, the log position, the role
// and the text. Messages of child runs are not recorded (what a child
// learned reaches the parent through its result). Text is cleaned for
// storage (valid UTF-8, no NUL) and cut at 64 KiB.
//
// Each message also gets a derived record of Kind "context" (id: the
// message's id + "/context", metadata message: the message's id): its
// Text is the message between the messages just before and after it,
// each cut at 300 characters, and its Vector the embedding of that text.
// It is rewritten when a neighbour arrives, and written once the message
// after it exists (or at the end of the run), since the latest message is
// in the visible window anyway. Every record's vector is the embedding of
// its own Text, so records can be exported and re-embedded like any
// other; the layer re-embeds by itself when the embedder's Model()
// changes.
//
// # Durability and batching
//
// A message must never be lost once Append or Record has returned, and
// the model call that embeds it should be batched and kept off the turn's
// critical path. The two are reconciled with a write-ahead state in the
// collection itself: onItemAppend upserts the message record at once,
// with a placeholder vector and metadata embedding=pending (the
// collection's write is durable when Upsert returns; no model runs). The
// vectors are computed in batches at the next of: the store hook at the
// end of Record, after the model has answered (the assistant message, the
// user message before it and the context that became complete, in one
// call); the next recall, in the same embedding call as the query; and
// onComplete, which embeds everything left. Each pass replaces pending
// records by embedded ones (embedding=<model id>). A process that stops
// in between loses nothing: the next session loads the pending records,
// finds them lexically at once and embeds them at its first recall.
// Vector search only considers records whose embedding metadata is the
// current embedder's Model(), so placeholders never match, and records of
// another model are re-embedded the same way after the embedder changes.
// A text the embedder rejects (nothing it can tokenise) stays lexical-only.
//
// A message deleted from the collection by someone else while a session
// runs (memctl rm, a host erasing a user) is not written back: before
// storing vectors, a pass looks its messages up by id, and those gone
// leave the session's mirror and lexical index, with their context
// record (until a pass looks a message up, a session that loaded it can
// still recall it from its mirror). A context whose record is missing,
// or whose text is no longer the message between its current
// neighbours, is written again by the next pass of a session that loads
// the thread afterwards (or that found the message gone), so deleting a
// message's neighbours' contexts (which quote it) is safe.
//
// # Ranking
//
// Hybrid by default: a BM25 index over the same messages (package
// memory/lexical), fused with vector similarity; ModeDense and
// ModeLexical rank by one side only. The BM25 index lives in the
// session's in-memory mirror of its scope's records: rebuilt from the
// collection at init (List by layer and thread or resource) and updated
// on every write the layer makes, so it always covers what is stored and
// nothing of another scope. Where the quality comes from, measured on the
// retrieval benchmark (benchmarks/recallquality: five hand-written corpora
// and real long-term conversations in the LoCoMo format; the defaults were
// chosen on all of them together, never on one):
//
//   - context on both sides, because in a conversation the answer ("day
//     three, I named him Gerald") often lacks the words of its topic,
//     which are in the turns before: a message's lexical document holds
//     its neighbours' words at a lower weight (Ranking.ContextWeight);
//     its vector score is the mean of its message's and its context
//     record's similarity, mixed with its best neighbour's
//     (Ranking.DenseContext);
//   - query handling: English stopwords and the words of questions about
//     the conversation itself ("remember", "told", "mention") are dropped;
//     words are reduced to Snowball stems, and irregular past forms to
//     their base ("bought" → "buy");
//   - score fusion on calibrated scales (see Ranking) rather than rank
//     fusion, which was clearly worse; the vector side counts only above
//     the crowd (its z-score is floored at 0): below the mean the offline
//     model's similarities are noise that pushed exact word matches down
//     on real conversations, and its weight is 0.3 (Ranking.DenseWeight);
//   - the speaker the question is about (Ranking.SpeakerPrior): a question
//     that names a speaker of the conversation (a "Name:" label, or a
//     short form of it) favours that speaker's messages, whichever role
//     recorded them; in a conversation between the user and the
//     assistant, the user's own messages, or the assistant's when the
//     question asks what the assistant said ("what did you suggest"); a
//     question naming nobody in a conversation between named people
//     favours nobody;
//   - dates (Ranking.DatePrior): a question naming a day, month or year
//     favours the messages written then.
//
// # Recall
//
// Recall queries with the latest user message, drops the messages that
// are in the visible history window (matched by item id, else by role and
// text), takes the TopK best and shows each with up to MessageRange
// messages of the same thread around it, runs of consecutive messages
// merged, oldest first, with their dates (in Options.Location, UTC by
// default), in one developer message. Within the budget the hits come
// first, best first, then their neighbours, nearest first; what does not
// fit is left out (counted with Options.Tokenizer, which should be the
// runtime's core.Config.Tokenizer). The output is a pure function of the
// records and the query: the same state renders the same bytes. The
// thread's latest message is nobody's context until the next message
// arrives (it is usually the question itself, which would otherwise lift
// its neighbours by matching itself).
//
// # Placement
//
// Live. The output follows the latest user message and so changes nearly
// every turn: anchored before history it would either pin a stale recall
// or publish a supersede every turn and re-bill the prefix behind it.
// After history it costs its own tokens only.
//
// # Functions
//
// The layer provides "search" (called by the model as "<id>/search") with
// arguments {"query": string, "k": 1..20}: an explicit search of the
// scope's messages, answered with the matching messages and their dates.
// Bad arguments (invalid JSON, wrong types, unknown fields, an empty or
// oversized query, k out of range) are rejected with a message back to
// the model; the layer's state is never changed by a search.
//
// Hosts search the same way through the session's state:
//
//	st, _ := core.State[semantic.State](session, "semantic")
//	hits, err := st.Search(ctx, "flights to Lisbon", semantic.SearchOptions{K: 5})
package semantic
