// OLMo 2: norms after each block only, q and k RMS-normed over the whole projection. llama.cpp
// adds no bias (a bias tensor is refused as one the model does not use). Its olmo2 GGUFs hold OLMo 3
// too: sliding layers where attention.sliding_window is given, rotated with the full layers' base.
#include "formats/families/olmo2.h"

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

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
               .keys = {"attention.sliding_window_pattern", "rope.freq_base_swa"},
               .read =
                   [](const GgufFile& f, const std::string& prefix, ModelConfig& c) {
                     c.block.qkv_bias = false;
                     post_norms_only(c);
                     if (c.sliding_window > 0) {  // OLMo 3: every 4th layer full unless the pattern says otherwise
                       read_gguf_sliding_layers(f, prefix, c, 4);
                       refuse_sliding_rope_base(f, prefix, c);
                     }
                   },
               .output_required = true},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
