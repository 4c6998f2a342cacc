#pragma once
// The experts' tensors of a Hugging Face mixture-of-experts checkpoint (Mixtral, Qwen3-MoE), as
// transformers saves them: one tensor per expert and projection (Mixtral's
// block_sparse_moe.experts.E.w1/w3/w2, Qwen3-MoE's mlp.experts.E.gate_proj/up_proj/down_proj), or
// the fused 3-D mlp.experts.gate_up_proj [experts, 2 ffn, dim] and mlp.experts.down_proj
// [experts, dim, ffn] of transformers' own modules (Gemma 4's: experts.gate_up_proj and
// experts.down_proj, beside the MLP). Each projection of a layer becomes one stacked
// tensor (model/weights.h: expert_gate, expert_up, expert_down) whose experts stay in the mapped
// files, in parts. The transposed layouts of gpt-oss and Llama 4 (HfExpertLayout: [experts, in,
// out]) are copied into the model as the stacked [out, in] rows. gpt-oss's checkpoints hold its
// experts in MXFP4 (gate_up_proj_blocks [experts, 2 ffn, dim / 32, 16] of two E2M1 values a byte,
// low nibble first, and gate_up_proj_scales [experts, 2 ffn, dim / 32] of E8M0 exponents; down_proj
// alike over ffn): repacked into ggml's MXFP4 blocks (model/quant_blocks.h), the same values.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/family_spec.h"
#include "formats/safetensors_reader.h"
#include "model/config.h"
#include "model/weights.h"

namespace tapdiff::formats {

class HfExperts {
 public:
  // `model` holds the copies of a transposed layout.
  HfExperts(model::Model& model, HfExpertLayout layout) : model_(model), config_(model.config()), layout_(layout) {}

  // Takes tensor `t` of file `f` when `name` (within layer `layer`, after "model.layers.N.") is
  // one of the experts' tensors; FormatError for one of the wrong shape, type or expert index.
  bool take(int layer, std::string_view name, const SafetensorsFile& f, const SafetensorsTensor& t);
  // Adds the stacked tensors to the model; FormatError naming the first expert missing.
  void add_to(model::Model& model) const;

 private:
  struct Stack {
    std::string file, name;  // the first tensor's file, and a name for every part
    model::DType dtype = model::DType::f32;
    std::int64_t part_rows = 0, cols = 0;
    std::vector<std::span<const std::byte>> parts;  // one per expert; empty span: not seen yet
    std::vector<std::string> names;                 // the tensor each part came from
  };
  void add_part(model::WeightKind kind, int layer, int expert, const std::string& tensor_name, const std::string& file,
                model::DType dtype, std::int64_t rows, std::int64_t cols, std::span<const std::byte> bytes);
  // A transposed layout's mlp.experts.gate_up_proj, down_proj and their _bias tensors, copied into the model.
  bool take_transposed(int layer, std::string_view name, const SafetensorsFile& f, const SafetensorsTensor& t);
  // gpt-oss's MXFP4 experts: a projection's _blocks and _scales, repacked into ggml's MXFP4 blocks
  // once both are seen.
  bool take_mxfp4(int layer, std::string_view name, const SafetensorsFile& f, const SafetensorsTensor& t);
  struct Mxfp4Halves {
    std::string file;
    const SafetensorsTensor *blocks = nullptr, *scales = nullptr;
  };
  void add_mxfp4(int layer, bool gate_up, const Mxfp4Halves& halves);

  model::Model& model_;
  const model::ModelConfig& config_;
  HfExpertLayout layout_;
  std::map<std::pair<model::WeightKind, int>, Stack> stacks_;
  std::map<std::pair<int, bool>, Mxfp4Halves> mxfp4_;  // (layer, gate_up): a projection's halves seen so far
};

}  // namespace tapdiff::formats
