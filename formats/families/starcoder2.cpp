// StarCoder 2: LayerNorms with biases, a plain FFN (c_fc, c_proj), biases on every projection where
// use_bias (the default), every layer in a sliding window where sliding_window is set.
// Its GGUF (starcoder2): llama.cpp applies no window, so attention.sliding_window is refused.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& starcoder2_family() {
  static const FamilySpec spec{
      .family = Family::starcoder2,
      .hf = {.model_types = {"starcoder2"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_layer_norms_and_plain_ffn(k, c.block, "hidden_act", "gelu_pytorch_tanh");
                   c.block.qkv_bias = c.block.o_bias = c.block.mlp_bias = k.boolean("use_bias", true);
                   c.sliding_window = k.integer("sliding_window", 0);
                 },
             .eps_key = "norm_epsilon",
             .layer_names = {{"mlp.c_fc.", "mlp.up_proj."}, {"mlp.c_proj.", "mlp.down_proj."}},
             .tied_by_default = true,
             .tokenizer_class = "GPT2Tokenizer"},
      .gguf = {.architectures = {"starcoder2"},
               .rope_style = RopeStyle::rotate_half,
               .read = [](const GgufFile& f, const std::string&,
                          ModelConfig& c) { read_gguf_layer_norms_and_plain_ffn(f, c, Activation::gelu_tanh); },
               .unread = {"attention.sliding_window"}},
  };
  return spec;
}

}  // namespace tapdiff::formats
