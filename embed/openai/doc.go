// Package openai is an embed.Embedder for servers that speak the OpenAI
// embeddings wire format: POST {BaseURL}/embeddings with
// {"model","input":[...],"encoding_format","dimensions"} answered by
// {"data":[{"embedding":[...],"index":i}],"model","usage"}. That covers
// OpenAI itself, Ollama's /v1, vLLM and Hugging Face Text Embeddings
// Inference.
//
// Large batches are split into sequential requests of Options.BatchSize
// texts. Each attempt has its own timeout; transport errors, timeouts and the
// statuses 408, 409, 425, 429 and 5xx (except 501, 505) are retried with
// exponential backoff (see embed.RetryPolicy), waiting at least as long as a
// Retry-After or retry-after-ms header asks. A final non-2xx answer is an
// *embed.HTTPError carrying the status and the server's message; an
// undecodable or inconsistent body wraps embed.ErrBadResponse; vectors whose
// length changes between responses wrap embed.ErrDimensionMismatch.
//
// The package starts no goroutines: requests run on the caller's goroutine.
package openai
