// Package steering is the steering layer: rules that allow, deny or
// guide the model's tool calls (the beforeToolCall hook) and guide its
// responses (the afterModelCall hook).
//
// # Tool-call rules
//
// A Rule matches a function_call by the tool's name (a glob: '*' matches
// any run of characters, '/' included, '?' one character) and/or a Match
// function over the call item (which sees the JSON arguments). Rules are
// checked in order:
//
//   - Guide queues the rule's guidance and checking goes on;
//   - Allow stops checking and lets the call run;
//   - Deny stops checking and refuses the call with the rule's Reason.
//
// A call no Allow or Deny rule matches runs. A Match function that panics
// denies the call (fail closed) with a reason naming the rule, and one that
// outlasts the beforeToolCall timeout (core.Timeouts[core.HookBeforeToolCall], 2 s
// by default) denies it too: the runtime treats a hook that errors, panics
// or times out as a denial (core.Layer.FailOpen is off), with a diagnostic. A
// panicking response rule is skipped.
//
// Match sees the JSON arguments as the model wrote them; a substring test
// on that text is bypassed by escapes ("\u0044ELETE") and case. Match on
// what the tool receives with ArgsContain (decoded, NFKC-normalised,
// case-folded values). Any rule may carry Guidance,
// queued when it matches (a Deny with guidance tells the model what to do
// instead, on top of the refusal). Drive it through Session.BeforeToolCall:
// a denied call comes back with ToolDecisionResult.Allowed false and the
// function_call_output to record, which carries the reason to the model.
//
// # Response rules
//
// A ResponseRule looks at the items the model wrote in one call (passed to
// Session.Record) and queues its guidance when Match is true, e.g. "the
// answer mentions a competitor" with Mentions("acme", "globex").
//
// # The guidance queue
//
// Guidance waits in the layer's state until the next assembly, which
// drains it: the guidance is rendered once, as one developer message
//
//	<steering>
//	<guidance rule="no-competitors">Recommend our own products.</guidance>
//	</steering>
//
// and is gone from the queue afterwards. A rule's guidance is queued at
// most once while it waits, so a loop of twenty identical calls yields one
// line, and the queue never holds more entries than there are rules. When
// the queue does not fit the layer's token budget, the oldest entries that
// fit are rendered and the rest wait for the next assembly.
//
// Because recall changes state as it renders (it drains), the layer is
// never pinned: it declares core.PlacementTail and renders fresh every turn
// in the tail band, the last thing the model reads, after the context
// updates. The projector claims the tail right after the system prompt, so
// guidance is never dropped for budget.
//
// State is execution-scoped by default: guidance pending at the end of a
// run is dropped with it. With core.ScopeThread it waits for the thread's
// next run.
package steering
