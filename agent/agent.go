// Package agent is an optional, small agent loop over the strata runtime:
// assemble the view, call the model, record what it wrote, run its tool
// calls (steering first, then the layers' provided functions or the
// runtime's tools), and go round again until the model stops calling tools,
// a round limit is reached or a custom condition says stop. It feeds the
// provider's cache figures back to the runtime, marking the first round of
// each turn, so cache-miss re-anchoring and blind-provider detection work,
// and when a turn starts after the provider's cache lifetime
// (Options.CacheLifetime) it tells the runtime the cache is cold, so the
// epoch re-anchors on that request: the full write it costs anyway
// carries fresh pins instead of stale ones and the updates superseding
// them.
// An answer the output cap cut off (provider.Response.Truncated) ends the
// turn with StopTruncated rather than passing for a finished one.
//
// Everything it does goes through core.Session, so a host that wants its
// own loop can copy the forty lines of Turn.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
)

// Options configure an Agent.
type Options struct {
	// Model answers each round. Required.
	Model provider.Model
	// MaxRounds caps the model calls of one turn; zero means 16.
	MaxRounds int
	// Until, when set, is asked after each round with the items the model
	// just wrote; returning true ends the turn even if it called tools.
	Until func(round int, items []core.Item) bool
	// MaxOutputTokens is passed to the model; zero uses its default.
	MaxOutputTokens int
	// Retries is how often a retryable provider error (429, 5xx, timeout)
	// is retried per round, honouring the provider's retry-after advice
	// up to MaxRetryWait; zero means 2, negative means none.
	Retries int
	// Backoff is the wait before the first retry when the provider gives
	// no advice, doubled each time; zero means one second.
	Backoff time.Duration
	// MaxRetryWait caps every wait before a retry, the provider's
	// retry-after advice and the doubled backoff alike, so a buggy or
	// hostile header cannot stall the turn for hours; a retry after the
	// cap that fails again ends the turn with the provider's error (whose
	// RetryAfter still holds the advice). Zero means one minute; negative
	// is refused.
	MaxRetryWait time.Duration
	// Sleep waits between retries; nil means a context-aware timer. Tests
	// inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
	// CacheLifetime is how long the provider keeps a prompt prefix cached
	// after its last use: when a turn starts longer than this after the
	// session's last model call, the cache is already lost, and the loop
	// tells the runtime (core.Session.ExpectColdCache) so the turn's one
	// full write also refreshes the anchored layers, instead of writing
	// the stale pins and carrying the updates that supersede them for the
	// rest of the epoch. Set it to the lifetime your
	// provider is configured for. Zero means 5 minutes: Anthropic's
	// default TTL (set one hour with its 1h cache), and the least OpenAI
	// documents for its in-memory cache, which it may keep longer and
	// offers extended retention for (set that lifetime if you use it).
	// Too short a lifetime re-anchors a cache that was still warm; too
	// long misses the saving. Negative turns it off.
	CacheLifetime time.Duration
	// Now is the clock the loop stamps model calls with; nil means
	// time.Now. Tests and simulations inject their own.
	Now func() time.Time
	// CacheTTL, when set, chooses at the start of each turn the cache
	// lifetime every request of the turn asks for
	// (provider.Request.CacheTTL; zero keeps the adapter's options),
	// from the turn's first view and the time since the last call. The
	// choice is reported back with the cache figures
	// (core.CacheReport.TTL), so a miss after a pause within it is not
	// taken for an expiry, and a turn that starts within it is not taken
	// for a cold cache (CacheLifetime). The adapters round a lifetime up
	// to what the provider offers (Anthropic one hour, OpenAI 24 hours),
	// but the report carries what the rule returned: a rule of its own
	// returns the provider's lifetime. TTLByCost is the rule strata ships
	// (it does); nil asks for nothing.
	CacheTTL func(TTLInput) time.Duration
}

// Agent runs turns on sessions.
type Agent struct {
	opts Options
}

// New validates the options.
func New(opts Options) (*Agent, error) {
	if opts.Model == nil {
		return nil, &core.ConfigError{Code: core.CodeInvalidRun, Field: "Options.Model", Reason: "nil"}
	}
	if opts.MaxRounds < 0 {
		return nil, &core.ConfigError{Code: core.CodeInvalidRun, Field: "Options.MaxRounds", Reason: "negative"}
	}
	if opts.MaxRetryWait < 0 {
		return nil, &core.ConfigError{Code: core.CodeInvalidRun, Field: "Options.MaxRetryWait", Reason: "negative"}
	}
	if opts.MaxRetryWait == 0 {
		opts.MaxRetryWait = DefaultMaxRetryWait
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = 16
	}
	if opts.Retries == 0 {
		opts.Retries = 2
	}
	if opts.Backoff == 0 {
		opts.Backoff = time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.CacheLifetime == 0 {
		opts.CacheLifetime = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Agent{opts: opts}, nil
}

// DefaultMaxRetryWait is the longest wait before a retry when
// Options.MaxRetryWait is zero.
const DefaultMaxRetryWait = time.Minute

// StopReason says why a turn ended (Result.Stop).
type StopReason string

// Stop reasons of a turn.
const (
	// StopNoToolCalls: the model answered without calling a tool.
	StopNoToolCalls StopReason = "no_tool_calls"
	// StopMaxRounds: Options.MaxRounds model calls were made. When the
	// model wrote no assistant message in them, Turn also returns a
	// *MaxRoundsError.
	StopMaxRounds StopReason = "max_rounds"
	// StopUntil: Options.Until said the turn is done.
	StopUntil StopReason = "until"
	// StopTruncated: the output cap cut the model's answer
	// (provider.Response.Truncated). The complete calls of that round
	// ran, so every recorded call has its output; the call the cap cut
	// off never reached the log (the adapter dropped it). Raise
	// Options.MaxOutputTokens, or run another turn to let the model go on.
	StopTruncated StopReason = "truncated"
)

// ErrMaxRounds is wrapped by every *MaxRoundsError.
var ErrMaxRounds = errors.New("agent: the turn reached its round limit without an answer")

// MaxRoundsError is Turn's error when the turn made Options.MaxRounds
// model calls and the model answered none of them in text: it kept
// calling tools. The Result is returned with it (Stop StopMaxRounds), and
// the log is consistent: every call has its output. A model looping on
// one tool usually does not see that tool's output as an answer (with
// provider/scripted, a script that does not read the history; New's
// checks catch the commonest case); a task that truly needs more calls
// needs a larger MaxRounds.
type MaxRoundsError struct {
	// Rounds is the number of model calls made.
	Rounds int
	// LastCalls are the names of the tools the last round called.
	LastCalls []string
}

func (e *MaxRoundsError) Error() string {
	return fmt.Sprintf("agent: %d model calls without an answer (the last called %s): raise Options.MaxRounds or check that the model sees its tools' outputs",
		e.Rounds, strings.Join(e.LastCalls, ", "))
}

func (e *MaxRoundsError) Unwrap() error { return ErrMaxRounds }

// Result reports one turn.
type Result struct {
	// Items are what the turn added to the log after the input: model
	// output and tool outputs, in order.
	Items []core.Item
	// Rounds are the model calls made, in order.
	Rounds []Round
	// Stop says why the turn ended.
	Stop StopReason
}

// Round is one model call of a turn.
type Round struct {
	// View is what was sent.
	View *core.View
	// Cache is the provider's figures, FirstRound set on the first.
	Cache core.CacheReport
	// Output is what the model wrote; ToolOutputs the outputs of its
	// calls, in the same order.
	Output      []core.Item
	ToolOutputs []core.Item
}

// Text is the text of the last assistant message of the turn.
func (r *Result) Text() string {
	for i := len(r.Items) - 1; i >= 0; i-- {
		if it := r.Items[i]; it.Type == core.TypeMessage && it.Role == core.RoleAssistant {
			return it.Text()
		}
	}
	return ""
}

// Turn appends the input (a user message, usually) and runs rounds until
// the model stops calling tools (or its answer was truncated, see
// StopTruncated). A turn that reaches Options.MaxRounds with no
// assistant message ends with a *MaxRoundsError. A provider error ends the turn with that
// error after the retries; what was recorded before stays consistent:
// every function call in the log has its output.
//
// A tool output the model reads as success is one whose state change is
// stored: core.Session.ExecuteTool re-runs a tool whose write to shared
// state lost to another run, and when that keeps failing the output says
// the change was not applied and the turn ends, after the round's calls
// are answered, with a *core.WriteError (errors.Is(err,
// storage.ErrConflict) for a conflict).
func (a *Agent) Turn(ctx context.Context, s *core.Session, input ...core.Item) (*Result, error) {
	if err := s.Append(ctx, input...); err != nil {
		return nil, err
	}
	res := &Result{}
	var ttl time.Duration // the turn's cache lifetime (Options.CacheTTL)
	for round := 0; ; round++ {
		if round == a.opts.MaxRounds {
			res.Stop = StopMaxRounds
			if res.Text() != "" {
				return res, nil
			}
			e := &MaxRoundsError{Rounds: round}
			if n := len(res.Rounds); n > 0 {
				for _, it := range res.Rounds[n-1].Output {
					if it.Type == core.TypeFunctionCall {
						e.LastCalls = append(e.LastCalls, it.Name)
					}
				}
			}
			return res, e
		}
		now := a.opts.Now()
		var idle time.Duration
		if round == 0 {
			last, ok := s.LastCacheReport()
			if ok && !last.At.IsZero() {
				idle = now.Sub(last.At)
			}
			// The lifetime the previous turn asked for, when longer,
			// is the one its cache lives by.
			if lifetime := max(a.opts.CacheLifetime, last.TTL); a.opts.CacheLifetime > 0 && idle > lifetime {
				s.ExpectColdCache()
			}
		}
		view, err := s.Assemble(ctx)
		if err != nil {
			return res, err
		}
		if round == 0 && a.opts.CacheTTL != nil {
			ttl = a.opts.CacheTTL(TTLInput{Session: s, View: view, Idle: idle})
		}
		resp, err := a.respond(ctx, provider.Request{View: view, ThreadID: s.Run().ThreadID, MaxOutputTokens: a.opts.MaxOutputTokens, CacheTTL: ttl})
		if err != nil {
			return res, err
		}
		report := resp.Cache
		report.FirstRound = round == 0
		report.At = now
		report.TTL = ttl
		s.ReportCache(report)
		res.Rounds = append(res.Rounds, Round{View: view, Cache: report, Output: resp.Items})
		cur := &res.Rounds[len(res.Rounds)-1]
		logged := len(s.Items())
		if err := s.Record(ctx, resp.Items...); err != nil {
			if len(s.Items()) == logged {
				return res, err // refused before anything was logged
			}
			// The items are in the log but a layer could not save its
			// state: answer every call, run none, so the log stays a
			// well-formed conversation.
			res.Items = append(res.Items, resp.Items...)
			for _, it := range resp.Items {
				if it.Type != core.TypeFunctionCall {
					continue
				}
				out := core.FunctionCallOutput(it.CallID, "error: not run: the session's state could not be saved")
				n := len(s.Items())
				appendErr := s.Append(context.WithoutCancel(ctx), out)
				if len(s.Items()) > n {
					res.Items = append(res.Items, out)
					cur.ToolOutputs = append(cur.ToolOutputs, out)
				}
				err = errors.Join(err, appendErr)
			}
			return res, err
		}
		res.Items = append(res.Items, resp.Items...)

		calls := 0
		var callErr, saveErr error
		for _, it := range resp.Items {
			if it.Type != core.TypeFunctionCall {
				continue
			}
			calls++
			// After a failure the remaining calls still get an output (the
			// log never holds a call without one), but do not run.
			var out core.Item
			if callErr != nil || saveErr != nil {
				out = core.FunctionCallOutput(it.CallID, "error: not run: an earlier call of this round failed")
			} else {
				var err error
				out, err = a.runCall(ctx, s, it)
				if err != nil && !errors.Is(err, core.ErrUnknownFunction) {
					callErr = err
				}
			}
			n := len(s.Items())
			if err := s.Append(context.WithoutCancel(ctx), out); err != nil {
				if len(s.Items()) == n {
					return res, errors.Join(callErr, saveErr, err) // not logged
				}
				// Logged, but a layer could not save: go on answering
				// the remaining calls, then report it.
				saveErr = errors.Join(saveErr, err)
			}
			res.Items = append(res.Items, out)
			cur.ToolOutputs = append(cur.ToolOutputs, out)
		}
		if callErr != nil || saveErr != nil {
			return res, errors.Join(callErr, saveErr)
		}
		if resp.Truncated {
			// The model did not finish: going round again would treat a
			// cut answer as done, or run into the same cap.
			res.Stop = StopTruncated
			return res, nil
		}
		if a.opts.Until != nil && a.opts.Until(round, resp.Items) {
			res.Stop = StopUntil
			return res, nil
		}
		if calls == 0 {
			res.Stop = StopNoToolCalls
			return res, nil
		}
	}
}

// runCall asks the steering layers, then runs the call. It always returns
// an output item, so the call is never left without one: a cancelled turn
// records that it was cancelled.
func (a *Agent) runCall(ctx context.Context, s *core.Session, call core.Item) (core.Item, error) {
	if err := ctx.Err(); err != nil {
		return core.FunctionCallOutput(call.CallID, "error: the turn was cancelled before the call ran"), err
	}
	decision, err := s.BeforeToolCall(ctx, call)
	if err != nil {
		return core.FunctionCallOutput(call.CallID, "error: the call could not be checked"), err
	}
	if !decision.Allowed {
		return decision.Output, nil
	}
	return s.ExecuteTool(ctx, decision.Call)
}

func (a *Agent) respond(ctx context.Context, req provider.Request) (*provider.Response, error) {
	backoff := a.opts.Backoff
	for attempt := 0; ; attempt++ {
		resp, err := a.opts.Model.Respond(ctx, req)
		if err == nil {
			return resp, nil
		}
		var perr *provider.Error
		if !errors.As(err, &perr) || !perr.Retryable || attempt >= a.opts.Retries || ctx.Err() != nil {
			return nil, err
		}
		wait := backoff
		if perr.RetryAfter > 0 {
			wait = perr.RetryAfter
		}
		wait = min(wait, a.opts.MaxRetryWait)
		if err := a.opts.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("agent: waiting to retry: %w", err)
		}
		backoff = min(backoff*2, a.opts.MaxRetryWait) // never overflows
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Spawn runs a child agent on a child session of parent for one task and
// hands its final assistant message back: onSpawn and onReturn fire on the
// parent's layers. The child uses the same model unless child is non-nil.
func (a *Agent) Spawn(ctx context.Context, parent *core.Session, task string, child *Agent) (*Result, error) {
	if child == nil {
		child = a
	}
	cs, err := parent.Spawn(ctx, core.RunOptions{})
	if err != nil {
		return nil, err
	}
	res, err := child.Turn(ctx, cs, core.UserMessage(task))
	var result []core.Item
	if res != nil {
		if text := res.Text(); text != "" {
			result = []core.Item{core.AssistantMessage(text)}
		}
	}
	if rerr := parent.Return(context.WithoutCancel(ctx), cs, result); rerr != nil {
		return res, errors.Join(err, rerr)
	}
	return res, err
}
