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
//
// # Opening an embedder from a specification
//
// Open builds an embedder from a string, as vectorstore.Open and
// storage.Open do for stores:
//
//	e, err := embed.Open(ctx, "hash:512", nil)
//
// The grammar (ParseSpec) takes a flag form or the model id an embedder
// reports (Embedder.Model), which is what a store records with its
// collection, so a recorded id opens its embedder again:
//
//	uselite | default | use-lite-en@0.2.0   the offline default model
//	hash:DIM | hash-DIM                      hashing, DIM in 1..65536
//	openai:MODEL[?dimensions=N]              an OpenAI-compatible /v1/embeddings
//	ollama:MODEL[?dimensions=N]              Ollama's /api/embed
//
// dimensions is the only parameter. The subpackages register their kind
// from an init function (Register), so the program links the ones it
// opens, e.g. import _ "github.com/stratamem/strata/embed/uselite".
// Remote embedders take their server and key from Options, else from the
// environment: OPENAI_BASE_URL and OPENAI_API_KEY, OLLAMA_HOST. Lazy
// declares a specification's model id and dimension and loads the model
// only on the first Embed.
package embed
