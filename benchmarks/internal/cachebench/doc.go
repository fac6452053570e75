// Package cachebench is strata's cache-stability benchmark: it measures
// what prompt caching saves when the context is assembled by strata's
// runtime, against the ways other frameworks assemble it and against an
// analytic optimum.
//
// A [Workload] is a scripted, deterministic agent run of at least 200 user
// turns (seeded math/rand/v2 PCG): realistic layers (a clock, a scratchpad
// the model rewrites through its provided function, a growing entity list,
// per-query retrieval, static instructions, a workspace of source files
// with small edits and a renderDelta), tool calls in the history, simulated
// time between requests (so the 5-minute cache lifetime matters) and, on
// two workloads, a token budget that history outgrows late in the run.
//
// [Run] replays a workload through core.Session for every [Strategy] and
// turns each assembled view into a request for the cachesim simulators
// ([Anthropic] explicit breakpoints, [OpenAI] automatic prefix caching):
// one block per tool schema, then one per item, identified by the SHA-256
// of its canonical JSON and sized by the runtime's token count. The
// simulator's figures of each request are fed back with
// Session.ReportCache, so cache-miss re-anchoring behaves as it would live.
//
// The strategies: [Anchored] (strata's default bands, epochs and
// breakpoints), [AnchoredHistoryCap] (plus layers/history's watermark cap),
// [SingleBand] (core.CacheConfig{Disabled: true}: no breakpoints),
// [SingleBandBreakpoints] (the same view with breakpoints after the system
// prompt and history), [AllInSystem] (every layer's text in the system
// message, the common approach elsewhere) and [Optimum]: request n carries
// the content of the single-band view and only what is new since request
// n-1 is uncached — the items logged since, plus each changed layer's
// renderDelta text (or its full new output when it has none); no write
// fee, TTL or minimum length.
//
// The temporal-days workload runs the real memory/temporal ledger (its
// record function, chains, Recall and renderDelta, on an embedded chromem
// store whose clock is the simulated time) over five days of bursts with
// hours between them and two bursts across midnight. It is where the
// ledger's decision on relative times (day granularity, anchored, a
// renderDelta for the date change) is measured: its [Variant]s replay the
// same script with the ledger in the live band and with humanized relative
// times ("12 minutes ago"), [Result.Variants] holds them, and the report
// adds what each day change and each resumption after a pause cost
// ([RequestLog], [Series.WarmNonRead]). It is left out of [Targets]
// (Workload.ExcludeFromTargets): its pauses expire any 5-minute cache,
// which the optimum ignores.
//
// [RunLongSession] is the long-session workload: a coding agent over 1,000
// model calls whose tool outputs are 2-20k tokens, against a 200k-token
// window, run on the Anthropic simulator under each [LongArm]: no
// compaction (the view outgrows the window), today's Policy truncation at
// the window, compaction as an event (core.Config.Compaction) and, once it
// exists, compaction plus tail trimming. [ReportOptions].LongSession adds
// its section to the report.
//
// The small-context workload ([SmallContextWorkload]) is a personal
// assistant whose tools and system prompt sit just under Anthropic's
// 1,024-token minimum, with a window of the last 20 messages: there the
// history policy decides the bill. It runs the window as configured before
// ([AnchoredWindow20], 28, 40 items, and sliding) beside layers/history's
// cost rule ([AnchoredWindowCost]) and [WindowOptimum], the offline optimum
// of the same window: dynamic programming over the history front of every
// request, billed with package pricing's rules for the recorded layout
// ([WindowModelBill] applies the same arithmetic to a strategy's own fronts
// and reproduces the simulator's bill). On the workloads whose user pauses,
// [AnchoredTTLLong] and [AnchoredTTLCost] compare the 5-minute cache with
// the extended lifetime, always or chosen per burst by
// pricing.Model.BestTTL.
//
// [WriteMarkdown] and [WriteSVG] turn results into the report and the plot
// of cumulative billed input; [Targets] checks the targets. The
// command benchmarks/cmd/cachebench writes them to benchmarks/results
// (make bench-cache).
package cachebench
