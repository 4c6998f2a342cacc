// dots.llm1 (dots1): Qwen3's attention (per-head q/k RMSNorm; q, k, v and o biases where
// attention_bias), sliding layers where layer_types (or, without them, from max_window_layers
// where sliding_window is set) say, and GLM-4.5's mixture of experts (formats/families/
// sigmoid_experts.h) with its own defaults: norm_topk_prob false, first_k_dense_replace 0.
// Its GGUF (dots1): expert_gating_func required (2, sigmoid), the selection bias where the file
// holds exp_probs_b.bias.
#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, c.block);
  c.block.qk_norm = QkNorm::per_head;
  const bool windowed = k.find("sliding_window") != nullptr && !k.find("sliding_window")->is_null();
  const int from = k.integer("max_window_layers", 62);  // Dots1Config's default
  read_layer_types(k, c, true, [&](int layer) { return windowed && layer >= from; });
  read_sigmoid_experts_hf(k, c, {.normalize = false, .shared_experts = 0, .dense_layers = 0});
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.qk_norm = QkNorm::per_head;
  read_sigmoid_experts_gguf(f, prefix, c, std::nullopt);
}

}  // namespace

const FamilySpec& dots1_family() {
  static const FamilySpec spec{
      .family = Family::dots1,
      .hf = {.model_types = {"dots1"}, .read = read_hf, .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"dots1"},
               .rope_style = RopeStyle::rotate_half,
               .keys = sigmoid_experts_gguf_keys({}),
               .read = read_gguf},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block =
                    [](ModelConfig& c) {
                      c.block.qk_norm = QkNorm::per_head;
                      synth_sigmoid_experts(c);
                    },
                .experts = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
