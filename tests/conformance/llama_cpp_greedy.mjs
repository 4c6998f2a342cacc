// Greedy tokens from llama.cpp's own CPU build (npm's node-llama-cpp), for the conformance suite:
//   node llama_cpp_greedy.mjs MODEL.gguf N_GENERATE TOKEN,TOKEN,... [CONTEXT_SIZE]
// prints the N generated token ids as JSON. The prompt's ids go in as they are (no BOS added). The
// context is the prompt and the generated tokens (and 8) unless CONTEXT_SIZE is given.
import os from "node:os";
import { getLlama } from "node-llama-cpp";

const [modelPath, generate, tokenList, contextSize] = process.argv.slice(2);
const prompt = tokenList.split(",").map(Number);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath });
// Threads set explicitly: left to its default, a run on 2 cores took 37 s instead of 1.
const context = await model.createContext({
  contextSize: contextSize ? Number(contextSize) : prompt.length + Number(generate) + 8,
  batchSize: 512,
  threads: os.availableParallelism(),
  flashAttention: false,  // llama.cpp's plain attention: what the reference's llama.cpp precision models
});
const sequence = context.getSequence();
const out = [];
for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
  out.push(token);
  if (out.length >= Number(generate)) break;
}
console.log(JSON.stringify(out));
await context.dispose();
await model.dispose();
await llama.dispose();
