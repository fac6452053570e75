// Package tokens counts tokens for the context runtime.
//
// A Tokenizer answers one question — how many tokens does this text cost —
// so the runtime can enforce budgets and report per-layer usage. This
// package holds the interface, the fast heuristic Estimate (ceil(runes/4),
// for when an exact count is not worth its cost) and Cache. It imports
// nothing outside the standard library, so a program that only counts with
// Estimate (the runtime's default) links no encoding tables.
//
// The exact BPE encodings of the OpenAI models ("o200k_base",
// "cl100k_base") are in the subpackage tokens/tiktoken, which embeds their
// tables in the binary; import it where an exact count is wanted:
//
//	tk, err := tiktoken.ForModel("gpt-4o")
//
// Cache memoizes counts for repeated texts, which is the common case when
// the same items are re-assembled turn after turn.
package tokens
