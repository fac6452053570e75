// Package core is strata's context runtime: it runs context layers around
// every model call and assembles the model's input so that the provider's
// prefix cache keeps hitting while memory changes.
//
// # Layers
//
// A Layer[S] is a typed unit of context with state S: an id, a slot (order
// within its band), a scope (execution, thread, resource, global), a token
// budget, a placement (anchor, live, tail or auto) and hooks. The runtime
// holds layers through the erased AnyLayer interface. Hooks run on their
// own goroutine under a timeout (Timeouts, by Hook); a non-init
// hook that errors, panics or times out becomes a Diagnostic (logged with
// log/slog and listed in the usage report) and the run goes on without that
// layer's contribution for that phase (Diagnostic.Hook names the hook).
// An init failure aborts Start unless the layer says OnInitError:
// InitErrorDisable.
//
// State returned by a hook is committed at once; for the durable scopes it
// is persisted through a storage.Store under key "state" with a
// compare-and-swap revision, so two runs of one resource never silently
// lose an update: a conflict is an error (errors.Is(err,
// storage.ErrConflict)) unless the layer provides Merge. After an
// unmerged conflict the layer continues from the stored state and
// revision (this run's change is the one reported lost), so one conflict
// does not make every later save of the run conflict; and the other
// layers' hooks of the same Append or Record still run (their errors are
// joined). An Init hook's Storage handle is revoked when the hook returns
// or times out (ErrStorageRevoked).
//
// # Acknowledged means stored
//
// A hook failure is a diagnostic with one exception: a write its layer's
// own store did not confirm. A layer that keeps records outside the state
// store (the memory layers' vector collection) returns a *WriteError for
// a record the store refused, and declares WritesRecords so that a write
// hook that times out, is cancelled or panics counts as unconfirmed too.
// Append, Record, Complete and ExecuteTool then return an error matching
// ErrNotStored (errors.As gives the *WriteError naming layer and item)
// instead of nil: a nil error means every layer holds what it keeps of the
// items. The items stay in the run's log and the layers retry what they
// hold unconfirmed at their next write, so a later nil means it is stored.
// Saving state equal to what the store holds writes nothing, so sessions
// of a layer whose state does not change never conflict.
//
// # Threads and resources
//
// With a ResourceID a thread belongs to that resource: thread-scoped state
// (and the recorded assembly) is keyed by storage.ThreadScopeID(resource,
// thread), and the memory layers' thread records name and are selected by
// both, so two resources that both call a thread "main" never share a key.
// The first run on a thread binds it to its resource (or to none) in the
// runtime's store; Start refuses a run naming a bound thread with another
// resource, or without one, with a *ThreadBoundError naming both. Thread
// and resource ids may not hold control characters. State that an earlier
// version kept under the bare thread id is moved to the new key by the run
// that binds the thread, and the layers adopt that thread's records that
// name no resource (InitParams.ClaimedThread).
//
// A recall that fails or times out leaves a pinned layer as it was: its
// pin (and what was published since) stands, no update is published and
// the turn is not counted in its churn. A live or tail layer contributes
// nothing that turn.
//
// # Turns
//
//	rt, _ := core.NewRuntime(core.Config{Layers: ..., System: ..., Policy: ...})
//	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "user-7"})
//	s.Append(ctx, core.UserMessage(input))        // onItemAppend
//	view, _ := s.Assemble(ctx)                    // recall, projectHistory
//	... send view to the model (provider/anthropic, provider/openai) ...
//	s.ReportCache(cacheFigures)                   // the provider's cache usage
//	s.Record(ctx, modelItems...)                  // onItemAppend, afterModelCall, store
//	s.ExecuteTool(ctx, call)                      // provided functions and tools
//	s.Complete(ctx, "ok")                         // onComplete, dispose
//
// The agent package runs this loop for hosts that want one.
//
// # Tool calls and steering
//
// The model sees one kind of tool. A host tool (Config.Tools, a Tool;
// package layers/toolcalls builds them from typed Go functions, with the
// state they share) and a function a layer provides (Layer.Functions,
// named "layerID/fn") are described by the same ToolSpec, share one name
// space with the layers' plain functions (Function.Plain, called by name
// alone and not offered) and are listed
// together, sorted, by Session.Tools and View.Tools. Session.ExecuteTool
// routes every call by its name.
//
// A tool's output is answered only once its state writes are stored. A
// write that loses the compare-and-swap to another run re-runs the tool on
// the stored state (up to three times), so a tool's Execute
// must be safe to re-run; otherwise the output tells the model the change
// was not applied (or not saved) and ExecuteTool returns a *WriteError
// (naming the state and the tool) matching ErrNotStored.
//
// The model's calls are recorded before anyone is asked about them, so
// nothing that Record triggers may give a call its effect. The order per
// call is: Record (the call is logged), BeforeToolCall (every layer, in
// slot order; the first denial wins), then ExecuteTool for an allowed call,
// and Append of its output (or of the denial). Hence:
//
//   - BeforeToolCall fails closed: a hook that errors, panics or times out
//     denies the call with a reason saying it could not be checked, and a
//     diagnostic, unless the layer says FailOpen;
//   - ExecuteTool refuses a call this session denied (ErrCallDenied);
//   - a layer's plain functions (Function.Plain: call names with no tool
//     offered, which the system prompt tells the model of) are applied by
//     their Call when ExecuteTool routes them, whenever some layer can
//     deny calls; with no such layer, Record applies them as it logs them
//     (not a call recorded with its output), and ExecuteTool only answers
//     them;
//   - a layer that tracks a call's effect (a file a read tool read) acts
//     on the call's output, whose ItemAppendParams.CallAllowed says that
//     the session let the call run.
//
// # Bands, epochs and the prompt cache
//
// A view is assembled in bands:
//
//	[system][anchor layers, slot asc][history][live layers, slot asc][tail]
//
// Placement picks the band and slot orders layers within it. Anchored
// layers are pinned: the first assembly of an epoch pins their rendered
// items and every later assembly of the epoch re-sends those exact bytes,
// even when the layer's fresh output differs. Drift is published instead as
// a developer message of context updates. By default it is published once,
// at the end of history (before the live band) on the turn the drift is
// seen, and stays in the conversation at that place for the rest of the
// epoch: written to the cache once, read from it after. It never lands
// inside a tool round trip: seen while a function call at the end of
// history still waits for its output, the update is left out of that view
// (which ends in an unanswered call, no valid request) and placed right
// after the outputs of the calls open then, once they are appended, so
// every view's history is a byte-identical prefix of the next one's. With
// CacheConfig.TrailingUpdates every drifted anchor is restated in one
// message after the live band on every turn instead:
//
//	[system][anchor][history ... updates ...][live][tail]              (default)
//	[system][anchor][history][live][context updates][tail]              (TrailingUpdates)
//
// The message reads:
//
//	<context_updates epoch="t:thread-1#0">
//	These supersede the blocks with the same layer id earlier in this context.
//	Where they disagree, these are correct.
//	<update layer="plan" action="replace">...</update>
//	</context_updates>
//
// with action (an UpdateAction, also LayerUsage.Update) replace (fresh
// output differs from the pin; a RenderDelta
// hook may describe the change compactly, and a delta that is empty, fails,
// panics or times out falls back to the full new output), add (the layer
// had nothing when the epoch pinned it) or retract (it has nothing now; an
// inline retraction stands as long as its pin does, a trailing one is
// repeated every turn). Updates are listed in slot order. A layer whose
// recall returns new state is never pinned: it renders live from then on,
// and if it was pinned the epoch re-anchors.
//
// An epoch re-anchors (fresh pins, no updates) only when the cache is lost
// or must be; EpochUsage.ReanchorReason (a ReanchorReason) names why:
//
//	initial              the run's first assembly
//	cache-miss           the provider reported a first-round miss (ReportCache)
//	cache-expired        the host said the cache is lost before the request
//	                     (ExpectColdCache; agent.Agent does after an idle time
//	                     longer than the cache lifetime), so the one write the
//	                     request costs anyway also refreshes the pins
//	max-age              CacheConfig.MaxEpochAssemblies assemblies (default 100)
//	update-pressure      updates > max(256, 0.5 x anchor tokens)
//	updates-over-budget  the updates did not fit the token budget (never dropped)
//	band-change          a pinned layer returned state and must go live
//	history-cut          the history front moved past a published update
//
// The first report after a re-anchor is not read as a miss (that request
// writes the new prefix). A provider that sends no cache figures, or misses
// 3 first rounds in a row, is marked blind and no longer consulted; age
// and update pressure still bound the epoch.
//
// Auto layers start anchored and change band only at an epoch boundary, by
// observed churn (the share of assemblies in which their output changed,
// over the whole run, after 4 assemblies): at or above 0.4 they go live,
// at or below 0.1 they return to the anchor band, in between they keep
// their band.
//
// CacheConfig{Disabled: true} is the single band of older frameworks: every
// layer renders fresh before history, nothing is pinned, and the view asks
// for no cache breakpoints (on Anthropic that caches nothing at all, which
// is why anchoring and the breakpoints travel together). Tail layers stay
// in the tail either way.
//
// The view names where cache breakpoints belong (View.Breakpoints): the end
// of the system prompt (tools come before it in every provider's order),
// the end of the anchor band and the end of history — never after the live
// band, the updates or the tail, and never more than Anthropic's four.
// View.PrefixHash is sha256 over the canonical JSON (sorted keys) of the
// system items and tool schemas.
//
// # Budgets and projection
//
// The layer pool (Config.LayerPool, default half of what the Policy leaves
// after the system prompt) is split by the budgets: fixed budgets and range
// minimums first, range maximums next, the rest evenly to auto layers; the
// pool is conserved exactly; +Inf amounts (Fixed(+Inf), Range(min, +Inf))
// are uncapped and split with the auto layers. An explicit finite
// LayerPool larger than what the Policy leaves after the system prompt is
// rejected (BUDGET_EXCEEDS_POOL): the view could not hold what the
// budgets allow. LayerPool Unlimited leaves the layers uncapped under a
// policy that bounds only the view; output it cannot hold is left out and
// reported (LayerUsage.Dropped, a diagnostic).
// A layer's output over its allocation is cut from the end with a
// diagnostic. With a Policy the projector holds the
// view to the budget (see package projector). Token counts are cached per
// item when it is recorded, so a turn counts only what is new.
//
// The newest user message is never dropped for lack of room: when it does
// not fit it is cut, its head and tail kept around a marker saying how
// many tokens were cut (the log keeps it whole), reported as
// Usage.UserMessageCut and a KindOverBudget diagnostic; when not even the
// marker fits, Assemble fails with a *projector.BudgetError
// (projector.ErrOverBudget) naming the sizes.
//
// # Compaction
//
// With Config.Compaction (a CompactionConfig; nil is off) compaction is an
// event in the run's log, not an edit of it. When an assembly's view
// (system prompt, the layers' output and history as already folded)
// would exceed Threshold*Window tokens, the runtime folds the history
// before its Keep newest items (never between a function call and its
// output) into one summary: it asks the Summarizer once
// (ExtractiveSummarizer, deterministic and offline, when nil; package
// agent's ModelSummarizer asks the host's model), counts the answer with
// its own tokenizer, cuts it to SummaryBudget, and appends one
// TypeCompaction item to the log holding the summary and the boundary
// (CompactionMark.Through, a log index). The request and its result are
// one item because they are made in one step: a summarizer that fails
// fails the Assemble (a *CompactionError wrapping its error) and logs
// nothing, so a log never holds a request without its result.
//
// Every later assembly shows, in place of the log items before the
// boundary, one developer message:
//
//	<conversation_summary>
//	The earlier part of this conversation was folded into this summary; ...
//	...summary...
//	</conversation_summary>
//
// The system prompt, the tools and the anchor band are untouched (the
// pins stand): a compaction costs the cache from the summary on, and
// re-anchors only when the epoch logic already says the cache is lost
// there (an inline context update inside the folded part:
// ReasonHistoryCut). The event items are never sent to the model and
// never given to the layers' hooks as conversation; Session.Items still
// returns every item, the events and the folded originals included, so a
// host that saves that log and re-appends it (Append or
// RunOptions.History) renders the same bytes without calling the
// summarizer again. A compaction whose boundary would not pass what is
// already folded is not made (no summarising in a loop): while the view
// still fits the window it is sent as it is, with a KindOverBudget
// diagnostic; past the window the Assemble fails with a *CompactionError
// wrapping ErrCompactionStalled. Usage.Compaction
// reports the count, the boundary, whether this assembly compacted, the
// summary's size, and Thrashing, latched once two compactions came within
// ThrashTurns assemblies of each other. A host decides a compaction of its
// own with Session.Compact (a "/compact" command, the end of a task): the
// next assembly compacts whatever the threshold, the same event with the
// same Keep and Summarizer; with nothing to fold it is dropped with a
// diagnostic.
//
// A Policy with projector.OverflowSummarize is a separate mechanism, a
// summary inside one projection: the runtime counts each summary
// Policy.Summarize returns with its own tokenizer and asks once per
// dropped range, reusing the answer when the same range is dropped again.
//
// # Long sessions
//
// Resident content (Session.Activate; kinds skills, memory, instructions,
// environment, then Config.ContentKinds) is logged as a TypeContent event
// and rendered on every assembly: content activated before the loop (before
// the model's first message or call) in the anchor band, in kind order, so
// it belongs to the head the session runs on; content activated mid-task as
// a message in history where it was activated, after the outputs of the
// calls open then, so that only its own tokens are billed and a call is
// never separated from its output. When a compaction folds the point of
// activation (or a history layer cuts before it) the content is mounted
// again at the front of history, right after the summary. Layers activate
// content from their item hook (ItemAppendParams.Activate), e.g.
// layers/instructions' discovery of a directory's AGENTS.md after a read.
//
// Tail trimming (Config.TailTrim) is a relief valve: only when the view
// nears the model's window are old tool outputs shown as a short
// "[tool output cleared] ref=log:N" marker that keeps the call id; the
// cleared range moves in steps of one horizon so the history's bytes stay
// the same between steps. The runtime's recall_history tool (offered with
// Compaction or TailTrim) reads folded or cleared items back by their log
// index.
//
// Reminders (Config.Reminders; TodoReminder, DelegationReminder, and with
// Compaction the runtime's pointer to the folded range and its thrashing
// hint) are rendered at the very end of the view, as one message, from
// state on every assembly: never logged, the same again on resume.
//
// # Usage report
//
// Every assembly returns a Usage (View.Usage, also Session.LastUsage):
// the turn, the token count of the view (Total) and of each band
// (BandTokens); per layer its band, whether it was served fresh, pinned or stale, tokens, budget,
// churn rate and rebill tokens (what its changes would have cost, each
// change re-billing the prefix behind it, had it not been pinned); per
// epoch its id, age, anchor and update tokens and re-anchor reason; and
// the diagnostics since the previous assembly; the resident content and
// reminders the view shows and the outputs it cleared. Config.Tracer sees
// it (telemetry.Tracer.StartAssemble emits it as OpenTelemetry
// attributes).
//
// # Plan records
//
// With Config.RecordAssemblies every assembly of a thread is recorded in
// the store under the thread's turn number (an AssemblyRecord, at most
// Config.AssemblyRetention per thread, 200 by default): the digests of the
// stable prefix (system items and sorted tool schemas), the anchor band and
// the dynamic rest; which log items history kept, cut, summarised or
// cleared (with references to the cleared bodies); the compaction
// boundary; the usage report; and the cache report of the call made with
// it. Package core/inspect (memctl inspect --list, --turn N) reads a
// record back and renders the view again byte for byte. A record costs
// what changed since the previous one: the log is stored once, in chunks,
// as it grows, and the bands that rarely change once per content.
//
// # Options
//
// Every option's zero value is its default, and an option is turned off
// one way, by its kind: an optional component is off when nil (Policy,
// Tracer, Logger), a numeric limit is lifted by a negative value
// (LayerPool, CacheConfig.HistoryStep), and a behaviour that is on by
// default has a bool that says so (CacheConfig.Disabled).
//
// # Token counts
//
// The runtime counts with Config.Tokenizer, tokens.Estimate when nil:
// importing core links no BPE tables. For exact counts of the OpenAI
// encodings use package tokens/tiktoken (tiktoken.ForModel).
package core
