package core

import (
	"fmt"
	"slices"

	"github.com/stratamem/strata/projector"
)

// TailTrimConfig turns on tail trimming (Config.TailTrim; nil is off): a
// relief valve, not a clamp. Only when a request nears the model's usable
// window are the tool outputs older than a token horizon shown as a short
// marker, "[tool output cleared] ref=log:N ...", that keeps the output's
// call id, so the conversation stays well formed. The bodies stay in the
// log: the marker's reference reads them back through the recall_history
// tool, and the plan record lists them (AssemblyRecord.ClearedOutputs).
// Below the threshold nothing is cleared, so a half-empty context never
// makes the model run a tool again.
//
// The cleared range grows in steps of one horizon, so between steps
// every assembly clears the same outputs and the history's bytes stay
// the same: the cache keeps hitting. With Compaction on, the outputs
// trimming clears count as gone when compaction decides, so a threshold
// below Compaction.Threshold clears before it compacts (which, measured
// on the cache benchmark's long session, bills more than folding).
type TailTrimConfig struct {
	// Window is the model's context window in tokens; zero means
	// Compaction.Window. One of the two is required.
	Window int
	// Threshold is the share of Window the view may reach before outputs
	// are cleared; zero means 0.9: near the window, past a compaction's
	// default threshold, so that with both on compaction folds first and
	// trimming holds what folding cannot (kept items too large). Clearing
	// earlier than folding costs more: the view stays large and every
	// step re-bills what follows it.
	Threshold float64
	// Horizon is the newest part of history, in tokens, whose outputs are
	// never cleared; zero means Window/4.
	Horizon int
	// MinTokens leaves outputs smaller than this alone: clearing them
	// saves nothing. Zero means 64.
	MinTokens int
}

// ClearedMarker opens the text a cleared tool output is shown as.
const ClearedMarker = "[tool output cleared]"

// ClearedOutput is a tool output a view showed cleared (Usage.Cleared,
// AssemblyRecord.ClearedOutputs).
type ClearedOutput struct {
	CallID string `json:"call_id"`
	// Ref is the output's place in the run's log, "log:N" (its index in
	// Session.Items); the recall_history tool reads it back.
	Ref string `json:"ref,omitempty"`
	// Tokens is the size of the output the marker replaced.
	Tokens int `json:"tokens,omitempty"`
}

func (c *TailTrimConfig) validate(compaction *CompactionConfig) error {
	switch {
	case c == nil:
		return nil
	case c.Window < 0:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "TailTrim.Window", Reason: "negative window"}
	case c.Window == 0 && (compaction == nil || compaction.Window <= 0):
		return &ConfigError{Code: CodeInvalidPolicy, Field: "TailTrim.Window", Reason: "the model's window is required (here or in Compaction.Window)"}
	case c.Threshold < 0 || c.Threshold > 1:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "TailTrim.Threshold", Reason: "the threshold must lie in (0, 1]"}
	case c.Horizon < 0:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "TailTrim.Horizon", Reason: "negative horizon"}
	case c.MinTokens < 0:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "TailTrim.MinTokens", Reason: "negative size"}
	}
	return nil
}

// trimConfig is a TailTrimConfig with its defaults resolved.
type trimConfig struct {
	limit, horizon, minTokens int
}

func (rt *Runtime) trimConfig() (trimConfig, bool) {
	c := rt.cfg.TailTrim
	if c == nil {
		return trimConfig{}, false
	}
	window := c.Window
	if window == 0 {
		window = rt.cfg.Compaction.Window
	}
	th := c.Threshold
	if th == 0 {
		th = 0.9
	}
	t := trimConfig{limit: int(th * float64(window)), horizon: c.Horizon, minTokens: c.MinTokens}
	if t.horizon == 0 {
		t.horizon = max(1, window/4)
	}
	if t.minTokens == 0 {
		t.minTokens = 64
	}
	return t, true
}

// trimPlan says which entries of history (whose first entry is log index
// start) a view of size tokens clears: the outputs that end before the
// boundary, which is the history's size less the horizon, rounded down to
// a step of one horizon: the uncleared part of history is one to two
// horizons long, so a clearing, which re-bills what follows it, comes at
// most once per horizon of growth. saved is the tokens clearing them saves.
func (rt *Runtime) trimPlan(history []projector.Entry[Item], start, size int) (clear []int, saved int) {
	cfg, ok := rt.trimConfig()
	if !ok || start < 0 || size <= cfg.limit {
		return nil, 0
	}
	total := sumTokens(history)
	step := cfg.horizon
	boundary := (total - cfg.horizon) / step * step
	acc := 0
	for i := range history {
		e := &history[i]
		acc += e.Tokens
		if acc > boundary {
			break
		}
		if e.Item.Type != TypeFunctionCallOutput || e.Tokens < cfg.minTokens {
			continue
		}
		clear = append(clear, i)
		saved += e.Tokens - rt.entry(clearedItem(e.Item, start+i, e.Tokens)).Tokens
	}
	return clear, saved
}

// clearedItem is the marker an output at log index idx is shown as.
func clearedItem(out Item, idx, tokens int) Item {
	return FunctionCallOutput(out.CallID, fmt.Sprintf("%s ref=log:%d (%d tokens; recall_history reads it back)", ClearedMarker, idx, tokens))
}

// trimTail clears what trimPlan says, on a copy of history.
func (s *Session) trimTail(outs []layerOutput, history []projector.Entry[Item], start int) ([]projector.Entry[Item], []ClearedOutput) {
	if s.rt.cfg.TailTrim == nil {
		return history, nil
	}
	clear, _ := s.rt.trimPlan(history, start, s.viewSize(outs, history))
	if len(clear) == 0 {
		return history, nil
	}
	history = slices.Clone(history)
	cleared := make([]ClearedOutput, 0, len(clear))
	for _, i := range clear {
		e := history[i]
		cleared = append(cleared, ClearedOutput{CallID: e.Item.CallID, Ref: fmt.Sprintf("log:%d", start+i), Tokens: e.Tokens})
		history[i] = s.rt.entry(clearedItem(e.Item, start+i, e.Tokens))
	}
	return history, cleared
}

// viewSize estimates the view over history: the system prompt, history
// without events, and the layers' fresh output.
func (s *Session) viewSize(outs []layerOutput, history []projector.Entry[Item]) int {
	size := sumTokens(s.rt.system) + sumTokens(dropEvents(history))
	for k := range outs {
		size += sumTokens(outs[k].fresh())
	}
	return size
}
