// Package embed defines Embedder, the interface strata's memory layers use to
// turn text into vectors, and the errors every implementation shares.
//
// Implementations live in subpackages:
//
//   - embed/uselite: the default, offline model (Universal Sentence Encoder
//     Lite, 512 dimensions) run in pure Go; install its files with
//     `make model`.
//   - embed/openai: any server speaking the OpenAI /v1/embeddings wire format
//     (OpenAI, Ollama's /v1, vLLM, Hugging Face TEI, ...).
//   - embed/ollama: Ollama's native /api/embed endpoint.
//   - embed/hashing: a deterministic feature-hashing embedder for unit tests.
//     It is NOT semantic: similar meanings do not give similar vectors.
//
// Every implementation rejects an empty batch and any text that is empty or
// only whitespace with an error wrapping ErrEmptyInput, before doing any work,
// so a bad record never costs a network call or a model run. Vectors are
// returned in the order of the input texts.
package embed
