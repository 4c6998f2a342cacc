#pragma once
// Deterministic random-weight Llama-family models of any shape, written as GGUF, so tests and
// benchmarks never need a download. The same options always give the same bytes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/dtype.h"

namespace tapdiff::formats {

struct SynthOptions {
  // The family, one whose file says how synth writes it (formats/family_spec.h SynthRecipe: llama,
  // qwen2 with QKV biases, qwen3moe with config.experts and q/k norms per head); the config's
  // rope_style and block are the family's.
  model::ModelConfig config;
  model::DType dtype = model::DType::f32;  // storage type of the matrices (norm weights and biases stay f32)
  // llama.cpp's _M mix over dtype q4_k or q5_k (its Q4_K_M and Q5_K_M files): output.weight, and
  // attn_v and ffn_down of the layers llama.cpp's use_more_bits picks, stored as Q6_K.
  bool medium_mix = false;
  std::uint64_t seed = 1;
  int outlier_channels = 0;   // residual-stream channels carrying large activations
  double outlier_scale = 30;  // their magnitude relative to the other channels
};

// Gains chosen so that what each block adds to the residual stream is as large, relative to the
// stream, as in a trained model such as stories260K (docs/models.md):
// q.k logits with a standard deviation of about kSynthQkGain make attention as peaked as trained
// attention (a few keys carry each row), and kSynthFfnDownGain makes up for the gated product's
// small magnitude.
inline constexpr double kSynthQkGain = 2.5;
inline constexpr double kSynthFfnDownGain = 2.5;

// Scales:
//   token_embd ~ N(0, 1);  wv, ffn_gate, ffn_up, wo ~ N(0, 1/in);  wq, wk ~ N(0, kSynthQkGain/in);
//   ffn_down ~ N(0, kSynthFfnDownGain/in);  norm weights ~ 1 + N(0, 0.1^2);  biases ~ N(0, 0.1^2);
//   output ~ N(0, 1/dim). Every update has about the same size whatever the depth, so the stream
//   grows along the layers and each update's share of it shrinks, as in trained models.
// Outlier channels: their embedding columns are multiplied by outlier_scale and their norm
// weights divided by it, the pattern trained models show.
void write_synth_model(const std::filesystem::path& path, const SynthOptions& options);

// Sets dtype and medium_mix from a storage name: a dtype name (model/dtype.h), q4_k_m or q5_k_m.
// False for any other name.
bool set_synth_storage(SynthOptions& options, std::string_view name);
std::string synth_storage_names();  // every name set_synth_storage takes, for messages

// A short hex digest of everything that determines the bytes write_synth_model writes (options
// and generator version): equal digests, equal files. Names cached synth models.
std::string synth_digest(const SynthOptions& options);

// Named shapes for `synth:NAME` (FormatError-free; UsageError for an unknown name):
//   tiny      dim 64, 2 layers, 4/2 heads of 16, ffn 192, vocab 512, context 2048
//   small     dim 256, 4 layers, 8/4 heads of 32, ffn 704, vocab 2048, context 4096
// (every width a multiple of 32, so each shape can be written in every dtype).
//   tinyllama dim 2048, 22 layers, 32/4 heads of 64, ffn 5632, vocab 32000, context 2048
//   llama3-8b dim 4096, 32 layers, 32/8 heads of 128, ffn 14336, vocab 128256, context 8192, base 5e5
// and mixtures of experts (arch qwen3moe: q/k norms per head, rotate-half RoPE of base 1e6, the
// chosen weights renormalised; the router's rows ~ N(0, 1/dim), stored f32):
//   tiny-moe      tiny's attention, 8 experts of ffn 64, 2 per token
//   qwen3-30b-a3b dim 2048, 48 layers, 32/4 heads of 128, 128 experts of ffn 768, 8 per token, vocab 151936
//   gpt-oss-20b   dim 2880, 24 layers, 64/8 heads of 64, 32 experts of ffn 2880, 4 per token, vocab 201088,
//                 base 1.5e5 (for --arch gpt-oss; no YaRN)
// and latent attention (arch deepseek2: DeepSeek-V3's sigmoid router in groups, a shared expert):
//   tiny-mla      dim 64, 3 layers (the first dense, ffn 192), 4 heads of 16 no-RoPE and 8 RoPE
//                 channels and values of 16, q rank 32, latent 32, 8 experts of ffn 32, 2 per token
//   deepseek-v3   dim 7168, 61 layers (3 dense, ffn 18432), 128 heads of 128 + 64 channels and values
//                 of 128, q rank 1536, latent 512, 256 experts of ffn 2048, 8 per token, vocab 129280
model::ModelConfig synth_shape(const std::string& name);
// Sets a shape's layer count, keeping its dense layers first (the others mixtures, where it has both).
void set_synth_layers(model::ModelConfig& c, int layers);

// The vocabulary written with synth models: <unk> <s> </s>, 256 byte tokens, printable ASCII
// pieces, then word pieces (with all their prefixes, so SentencePiece merges reach them), then
// filler pieces up to vocab. Exposed for tests.
struct SynthVocabulary {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
};
SynthVocabulary synth_vocabulary(int vocab);

}  // namespace tapdiff::formats
