// Package tokens counts tokens for the context runtime.
//
// A Tokenizer answers one question — how many tokens does this text cost —
// so the runtime can enforce budgets and report per-layer usage. Three
// encodings are available:
//
//   - "o200k_base": the BPE of GPT-4o, GPT-4.1, GPT-5 and the o-series.
//   - "cl100k_base": the BPE of GPT-4 and GPT-3.5.
//   - "estimate": a fast heuristic, ceil(runes/4), for when an exact count
//     is not worth its cost (see Estimate).
//
// The BPE tables are embedded in the binary (github.com/pkoukk/tiktoken-go-loader),
// so counting never touches the network or the file system. Each encoding
// is built once per process on first use (that costs about a second and
// tens of megabytes) and then shared by every Tokenizer that names it.
//
// Counting treats special-token text such as "<|endoftext|>" as ordinary
// text: prompts are user data, and a count must never fail or panic because
// a document happens to contain one of those strings.
//
// Cache memoizes counts for repeated texts, which is the common case when
// the same items are re-assembled turn after turn.
package tokens
