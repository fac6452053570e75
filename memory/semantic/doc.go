// Package semantic is strata's semantic-recall layer: it records every
// user and assistant message of a thread as a record in a vectorstore
// collection and, each turn, recalls the earlier messages most related to
// the latest user message, with their neighbours and dates, skipping what
// the model already sees in its history window.
//
// Add it in one line:
//
//	l, err := semantic.New(store, semantic.Options{})
//	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
//
// # Records
//
// Each message is one vectorstore.Record of Kind "message": Layer the
// layer id, Scope the run's thread and resource, Text the message,
// CreatedAt the store clock's time, Vector the embedding of Text, Terms
// its lexical document (below), and metadata role, seq (the message's
// place in its thread, which orders the messages written in the same
// microsecond), prev and next (the ids of the thread's messages before
// and after it; next is set once the message's context is complete), run,
// item_id (the item's own id, when it had one) and embedding (see below).
// Record ids are deterministic: from the item id when the item has one,
// so a host that appends the same message again writes to the same record
// (which keeps its place and vector), else from the run, the log
// position, the role and the text. Messages of child runs are not
// recorded (what a child learned reaches the parent through its result).
// Text is cleaned for storage (valid UTF-8, no NUL) and cut at 64 KiB.
//
// Each message also gets a derived record of Kind "context" (id: the
// message's id + "/context", metadata message: the message's id): its
// Text is the message between the messages just before and after it,
// each cut at 300 characters, and its Vector the embedding of that text.
// It is written with the message's vector, once the messages after it
// exist (or at the end of the run).
//
// # Cost bounded by the turn, not by the history
//
// A session holds no copy of its scope. Both rankings run in the
// collection: BM25 over the messages' Terms (Collection.SearchTerms: an
// inverted index in the embedded store, SQL over a postings table on
// PostgreSQL) and the vector query, both filtered by the scope. A
// session's start reads the thread's two latest messages (the context of
// the next one), a Record writes the new messages and, once per
// EmbedBatch messages, their vectors, and a search reads its candidates.
// None of it grows with the number of messages the user has (see
// benchmarks/results/scale.md). Stores written by versions that kept a
// BM25 index in memory are upgraded at the first session of each scope
// (the messages get their Terms and links; vectors are kept).
//
// # Durability and batching
//
// A message must never be lost once Append or Record has returned, and
// the model call that embeds it is batched and kept off the turn: the
// collection itself holds the pending state. onItemAppend creates the
// message record at once with a placeholder vector, metadata
// embedding=pending and a lexical document of the message and the two
// before it, so it is findable by words the moment Append returns. The
// vectors are computed in batches: at the end of Record, once EmbedBatch
// of the session's messages have a complete context (the two messages
// after them exist), in one model call; at onComplete for everything
// left; and by State.Flush. Each pass rewrites the messages with their
// vector, their final lexical document (the two messages after them
// included) and next link, and writes their context records. A process
// that stops in between loses nothing: the records wait, pending, and the
// next session of the scope to complete embeds them. Vector search only
// considers records whose embedding metadata is the current embedder's
// Model(), so placeholders never match; messages embedded by another
// model are ranked by words only until State.Reembed (or memctl's re-embedding) gives them a vector from the current model. A text the
// embedder rejects (nothing it can tokenise) stays lexical-only
// (embedding=rejected:<model>).
//
// A message deleted from the collection by someone else while a session
// runs (memctl rm, a host erasing a user) is not written back: before
// storing vectors a pass looks its messages up by id and drops those that
// are gone. Nothing else of a session remembers a message: a deleted one
// is never ranked again. A message's neighbours hold its words in their
// lexical documents; a tool that deletes or edits messages calls Reindex
// for their threads (memctl does).
//
// # Ranking
//
// Hybrid by default: BM25 over the messages' lexical documents (analysed
// with package memory/lexical), fused with vector similarity; ModeDense
// and ModeLexical rank by one side only. Where the quality comes from,
// measured on the retrieval benchmark (benchmarks/internal/recallquality: five
// hand-written corpora and real long-term conversations in the LoCoMo
// format; the defaults were chosen on all of them together, never on
// one):
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
//     short form of it, among the candidates' speakers) favours that
//     speaker's messages, whichever role recorded them; in a conversation
//     between the user and the assistant, the user's own messages, or the
//     assistant's when the question asks what the assistant said ("what
//     did you suggest"); a question naming nobody in a conversation
//     between named people favours nobody;
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
// fit is left out (counted with the runtime's token counter,
// core.RecallParams.Tokens, the one that cuts the layer's output). The output is a pure function of the
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
// Hosts search a scope the same way through the layer, and list, put
// and delete its messages:
//
//	scope := vectorstore.Scope{Thread: "t1", Resource: "alice"}
//	hits, err := l.Search(ctx, scope, "flights to Lisbon", semantic.SearchOptions{K: 5})
package semantic
