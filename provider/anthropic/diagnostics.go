package anthropic

import (
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/stratamem/strata/core"
)

// Cache diagnostics: the Messages API compares a request with the one
// whose response id it is given (diagnostics.previous_message_id) and
// says where the two diverged, so a miss can be put down to the model,
// the system prompt, the tools or the messages instead of guessed at.
// The API keeps a fingerprint only of requests that carry the
// diagnostics object, so the first request of a thread opts in with a
// null id and every later one names the response before it.

// diagnosticsSupported reports whether model is one the Claude API
// serves under its own name. Cache diagnostics exist on the Claude API
// only, not on Amazon Bedrock or Vertex AI, whose model ids a gateway
// speaking the Messages API may pass through: Bedrock's carry
// "anthropic." (also behind a region prefix such as "us.") or are ARNs,
// Vertex AI's carry a version after '@'.
func diagnosticsSupported(model string) bool {
	return !strings.Contains(model, "anthropic.") && !strings.HasPrefix(model, "arn:") && !strings.Contains(model, "@")
}

// diagnostics is the request's diagnostics object for thread: the
// previous response's id, or null to opt in on the thread's first
// request. ok is false when no comparison is asked for: diagnostics off,
// the model not served by the Claude API, or no thread to compare within.
func (m *Model) diagnostics(thread string) (d sdk.DiagnosticsParam, ok bool) {
	if !m.diagnose || thread == "" {
		return d, false
	}
	if id, found := m.last.Get(thread); found {
		d.PreviousMessageID = param.NewOpt(id)
	} else {
		d.PreviousMessageID = param.Null[string]()
	}
	return d, true
}

// cacheMiss reads the response's diagnostics. diagnostics is null when
// none were asked for or the prefix matched: no miss. Present with a null
// cache_miss_reason, the comparison was still running when the response
// was written (Pending). A reason the API adds later than this adapter
// knows is kept in Detail under MissUnavailable.
func cacheMiss(msg *sdk.Message) *core.CacheMiss {
	if !msg.JSON.Diagnostics.Valid() {
		return nil
	}
	r := msg.Diagnostics.CacheMissReason
	if !msg.Diagnostics.JSON.CacheMissReason.Valid() || r.Type == "" {
		return &core.CacheMiss{Pending: true}
	}
	miss := &core.CacheMiss{Detail: r.Type, MissedTokens: int(r.CacheMissedInputTokens)}
	switch r.Type {
	case "model_changed":
		miss.Reason = core.MissModelChanged
	case "system_changed":
		miss.Reason = core.MissSystemChanged
	case "tools_changed":
		miss.Reason = core.MissToolsChanged
	case "messages_changed":
		miss.Reason = core.MissMessagesChanged
	case "previous_message_not_found":
		miss.Reason = core.MissPreviousNotFound
	default:
		// "unavailable": the API could not diagnose, e.g. because another
		// prompt-affecting parameter (thinking, tool_choice) changed.
		miss.Reason = core.MissUnavailable
	}
	return miss
}
