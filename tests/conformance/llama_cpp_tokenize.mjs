// Token ids from llama.cpp's own tokenizer (npm's node-llama-cpp), for the conformance suite:
//   node llama_cpp_tokenize.mjs MODEL.gguf < strings.json
// reads a JSON list of strings and prints, as JSON, the ids of each (no BOS, special tokens in the
// text read as text). Only the vocabulary is loaded.
import { readFileSync } from "node:fs";
import { getLlama } from "node-llama-cpp";

const [modelPath] = process.argv.slice(2);
const texts = JSON.parse(readFileSync(0, "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath, vocabOnly: true });
console.log(JSON.stringify(texts.map((text) => Array.from(model.tokenize(text, false)))));
await model.dispose();
await llama.dispose();
