// Token ids from llama.cpp's own tokenizer (npm's node-llama-cpp), for the conformance suite:
//   node llama_cpp_tokenize.mjs MODEL.gguf [special] < strings.json
// reads a JSON list of strings and prints, as JSON, {"ids": the ids of each (no BOS; the text of
// special tokens read as those tokens with "special", else as text), "add_bos" and "add_eos":
// whether llama.cpp starts a prompt with BOS and ends it with EOS}. Only the vocabulary is loaded.
import { readFileSync } from "node:fs";
import { getLlama } from "node-llama-cpp";

const [modelPath, special] = process.argv.slice(2);
const texts = JSON.parse(readFileSync(0, "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath, vocabOnly: true });
const ids = texts.map((text) => Array.from(model.tokenize(text, special === "special")));
console.log(
  JSON.stringify({ ids, add_bos: model.tokens.shouldPrependBosToken, add_eos: model.tokens.shouldAppendEosToken }),
);
await model.dispose();
await llama.dispose();
