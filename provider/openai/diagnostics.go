package openai

import (
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/stratamem/strata/core"
)

// Prompt-cache diagnostics: on the Responses API, for gpt-5.6 and later,
// a request naming an earlier response in
// prompt_cache_options.comparison_response_id gets back
// prompt_cache_diagnostics, which says whether the prefix that response
// used could be reused and, when not, what changed first. Naming it only
// asks for the comparison: it loads no conversation and does not restrict
// which cached prefix the request may reuse.

// diagnosticsSince is the first model version with prompt-cache
// diagnostics.
var diagnosticsSince = [2]int{5, 6}

// diagnosticsSupported reports whether model is an OpenAI model with
// prompt-cache diagnostics: "gpt-<major>[.<minor>]…" from gpt-5.6 on
// ("gpt-5.6", "gpt-5.6-mini", "gpt-6-astra"). Other names, including
// those of compatible servers, never ask.
func diagnosticsSupported(model string) bool {
	rest, ok := strings.CutPrefix(model, "gpt-")
	if !ok {
		return false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end >= 0 {
		rest = rest[:end]
	}
	majorText, minorText, _ := strings.Cut(rest, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil {
		return false
	}
	minor := 0
	if minorText != "" {
		if minor, err = strconv.Atoi(minorText); err != nil {
			return false
		}
	}
	return major > diagnosticsSince[0] || major == diagnosticsSince[0] && minor >= diagnosticsSince[1]
}

// cacheMiss reads a response's prompt_cache_diagnostics: nil when none
// were asked for or the prefix was reused (cache_hit). Reasons are
// normalised to core.MissReason; the raw reason (or type) stays in
// Detail. Changes of request settings that are neither model, tools nor
// input (prompt_cache_key, text format, reasoning effort, verbosity) and
// reasons this adapter does not know are MissUnavailable: core has no
// reason for them and they point at no band. A service tier change is a
// model change, as Anthropic counts a change of speed.
func cacheMiss(r *responses.Response) *core.CacheMiss {
	if !r.JSON.PromptCacheDiagnostics.Valid() {
		return nil
	}
	d := r.PromptCacheDiagnostics
	switch d.Type {
	case "", "cache_hit":
		return nil
	case "cache_miss":
		miss := &core.CacheMiss{Detail: d.Reason, MissedTokens: int(d.CacheMissedTokens), Reason: core.MissUnavailable}
		switch d.Reason {
		case "model_changed", "service_tier_changed":
			miss.Reason = core.MissModelChanged
		case "tools_changed":
			miss.Reason = core.MissToolsChanged
		case "input_changed", "context_compacted":
			// The adapter sends the system prompt as input items, so a
			// changed system prompt is reported here too.
			miss.Reason = core.MissMessagesChanged
		}
		if miss.Detail == "" {
			miss.Detail = d.Type
		}
		return miss
	case "comparison_response_not_found":
		return &core.CacheMiss{Reason: core.MissPreviousNotFound, Detail: d.Type}
	}
	// "unavailable", or a type added later.
	return &core.CacheMiss{Reason: core.MissUnavailable, Detail: d.Type}
}
