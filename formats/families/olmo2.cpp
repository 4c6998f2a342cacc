// OLMo 2: norms after each block only, q and k RMS-normed over the whole projection. llama.cpp
// adds no bias (a bias tensor is refused as one the model does not use), and does not read OLMo
// 3's pattern of sliding layers.
#include "formats/families/olmo2.h"

#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void post_norms_only(ModelConfig& c) {
  c.block.pre_norms = false;
  c.block.post_norms = true;
  c.block.qk_norm = QkNorm::whole;
}

}  // namespace

void read_olmo2_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  read_attention_bias(k, c.block);
  post_norms_only(c);
}

const FamilySpec& olmo2_family() {
  static const FamilySpec spec{
      .family = Family::olmo2,
      .hf = {.model_types = {"olmo2"}, .read = read_olmo2_hf, .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"olmo2"},
               .rope_style = RopeStyle::rotate_half,
               .read =
                   [](const GgufFile&, const std::string&, ModelConfig& c) {
                     c.block.qkv_bias = false;
                     post_norms_only(c);
                   },
               .unread = {"attention.sliding_window"}},
  };
  return spec;
}

}  // namespace tapdiff::formats
