// Package hashing is a deterministic feature-hashing embed.Embedder meant for
// unit tests and offline plumbing checks.
//
// It is NOT a semantic model. Each lower-cased word and each word bigram is
// hashed (FNV-1a) to a coordinate and a sign, the counts are summed and the
// vector is L2-normalised. Texts that share words get positive cosine
// similarity; paraphrases with different words get roughly none. Use it where
// a test needs stable, cheap vectors; use embed/uselite for anything that
// depends on meaning.
package hashing
