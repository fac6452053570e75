// Package ollama is an embed.Embedder for Ollama's native embedding endpoint,
// POST {BaseURL}/api/embed with {"model","input":[...]} answered by
// {"model","embeddings":[[...],...]}. (Ollama's OpenAI-compatible /v1 is
// served by package embed/openai.)
//
// Batching, per-attempt timeouts, retries with backoff and Retry-After, and
// the error types are the same as in embed/openai: a final non-2xx answer is
// an *embed.HTTPError with Ollama's {"error":"..."} message, an undecodable
// or inconsistent body wraps embed.ErrBadResponse, a changing vector length
// wraps embed.ErrDimensionMismatch. No goroutines are started.
package ollama
