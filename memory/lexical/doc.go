// Package lexical is a small in-memory BM25 index for strata's memory
// layers: documents made of weighted fields, an English analyzer
// (Unicode words, stopwords, irregular past forms mapped to their base,
// Snowball stems from github.com/kljensen/snowball), deterministic
// scores and result order, safe for concurrent use.
//
// It holds no records of its own: a layer keeps it in step with its
// vectorstore collection (rebuilt from a List at init, updated on every
// write), so lexical and vector search always cover the same memories.
// memory/semantic uses it for the lexical half of its hybrid ranking.
//
// Scoring is Okapi BM25 with the always-positive IDF
// ln(1 + (N-n+0.5)/(n+0.5)). A field of weight w counts each of its
// terms w times toward the term frequency and the document length, so a
// message indexed with its neighbours at weight 0.3 matches through them
// without being outranked by the neighbours themselves.
package lexical
