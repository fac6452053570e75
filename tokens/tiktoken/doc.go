// Package tiktoken provides the BPE tokenizers of the OpenAI models as
// tokens.Tokenizer values:
//
//   - "o200k_base": the BPE of GPT-4o, GPT-4.1, GPT-5 and the o-series.
//   - "cl100k_base": the BPE of GPT-4 and GPT-3.5.
//
// New also accepts "estimate" (tokens.EstimateName) and returns
// tokens.Estimate, so a configured encoding name can name either.
//
// The BPE tables are embedded in the binary (github.com/pkoukk/tiktoken-go-loader),
// so counting never touches the network or the file system. Importing this
// package installs that offline loader in github.com/pkoukk/tiktoken-go
// (an init function; the loader is a global of that package). Each
// encoding is built once per process on first use (that costs about a
// second and tens of megabytes) and then shared by every Tokenizer that
// names it.
//
// Counting treats special-token text such as "<|endoftext|>" as ordinary
// text: prompts are user data, and a count must never fail or panic because
// a document happens to contain one of those strings.
//
// The package lives apart from tokens so that a program counting with
// tokens.Estimate (the runtime's default) does not link these tables.
package tiktoken
