package core

// MissReason is why a provider says its prompt cache could not reuse the
// previous request's prefix (CacheMiss.Reason), normalised across
// providers.
type MissReason string

// The miss reasons providers report.
const (
	// MissModelChanged: the request named another model.
	MissModelChanged MissReason = "model_changed"
	// MissSystemChanged: the system prompt differs.
	MissSystemChanged MissReason = "system_changed"
	// MissToolsChanged: the tool definitions differ.
	MissToolsChanged MissReason = "tools_changed"
	// MissMessagesChanged: the message history diverged.
	MissMessagesChanged MissReason = "messages_changed"
	// MissPreviousNotFound: the provider no longer holds the previous
	// request to compare with (expired or evicted).
	MissPreviousNotFound MissReason = "previous_not_found"
	// MissUnavailable: the provider could not say.
	MissUnavailable MissReason = "unavailable"
)

// CacheMiss is a provider's own account of a cache miss (CacheReport.Miss),
// when the provider gives one (Anthropic's cache diagnostics, OpenAI's
// prompt-cache diagnostics).
type CacheMiss struct {
	Reason MissReason
	// Detail is the provider's own reason code or text, as sent.
	Detail string
	// MissedTokens is the input the provider could not serve from the
	// cache because of the divergence, when it says (0: not given).
	MissedTokens int
	// Pending is true when the provider had not finished comparing the
	// requests: no evidence either way.
	Pending bool
}
