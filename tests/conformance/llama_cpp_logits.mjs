// Raw logits from llama.cpp's own CPU build (npm's node-llama-cpp), for the conformance suite:
//   node llama_cpp_logits.mjs MODEL.gguf TOKEN,TOKEN,... ROWS [KV_TYPE]
// evaluates the tokens as one sequence (teacher forcing) and prints, as JSON, the logits of the
// whole vocabulary after each of the last ROWS tokens: [[logit of id 0, id 1, ...], ...]. KV_TYPE:
// the KV cache's ggml type (F32), in place of llama.cpp's default F16.
import os from "node:os";
import { getLlama } from "node-llama-cpp";

const [modelPath, tokenList, rowsArg, kvType] = process.argv.slice(2);
const tokens = tokenList.split(",").map(Number);
const rows = Number(rowsArg);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({
  contextSize: tokens.length + 8,
  batchSize: 512,
  threads: os.availableParallelism(),
  flashAttention: false,  // as llama_cpp_greedy.mjs
  ...(kvType ? { experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType } : {}),
});
const sequence = context.getSequence();
const input = tokens.map((t, i) => (i >= tokens.length - rows ? [t, { generateNext: { logits: true } }] : t));
const output = await sequence.controlledEvaluate(input);
const result = [];
for (let i = tokens.length - rows; i < tokens.length; ++i) {
  const logits = output[i].next.logits;
  const row = new Array(logits.size);
  for (const [token, value] of logits) row[token] = value;
  result.push(row);
}
console.log(JSON.stringify(result));
await context.dispose();
await model.dispose();
await llama.dispose();
