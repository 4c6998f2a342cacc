#include "reference/emulated_ops.h"

#include <optional>

#include <fmt/core.h>

#include "formats/llama_cpp_precision.h"
#include "reference/emulation.h"
#include "reference/llama_cpp_rounding.h"
#include "reference/rounding.h"

namespace tapdiff::reference {
namespace {

// The depth of one tensor-core MMA: the products an f16-sum GEMM adds in f32 before rounding.
constexpr int kTensorCoreDepth = 16;

class EmulatedOps final : public Ops<float> {
 public:
  EmulatedOps(const model::Model& m, WeightStore<float>& weights, model::Precision precision,
              std::uint64_t weight_budget)
      : Ops<float>(m, weights), r_(roundings(precision)) {
    if (r_.f16_tile_rows > 0)
      f16_tiles_.emplace(m, Roundings{.stored = Storage::f16, .matrices = Storage::f16}, weight_budget);
  }

  std::string kernel(model::Op op) const override { return Ops<float>::kernel(op) + suffix(op); }
  std::string rounds_as() const override {
    if (r_.ggml_steps) return ", rounding as llama.cpp's CPU backend";
    if (r_.f16_tile_rows > 0) return ", rounding as llama.cpp's Vulkan backend";
    return {};
  }

  void norm(const Mat<float>& x, const VecMap& w, const float* bias, double eps, Mat<float>& out) override {
    if (!r_.ggml_steps) return Ops<float>::norm(x, w, bias, eps, out);
    if (config_.block.norm == model::NormKind::rms) return rms_norm_as_llama_cpp(x, w, eps, out);
    layer_norm_as_llama_cpp(x, w, bias, eps, out);
  }

  void head_norm(const Mat<float>& x, const VecMap& w, Mat<float>& out) override {
    if (!r_.ggml_steps) return Ops<float>::head_norm(x, w, out);
    rms_norm_as_llama_cpp(x, w, config_.norm_eps, out);
  }

  void product(const Mat<float>& x, model::WeightKind matrix, int layer, const float* bias, Mat<float>& out) override;

  // llama.cpp's angles are ggml's, stepped in f32.
  model::RopeFrequencies rope_frequencies(int layer, int positions) const override {
    if (!r_.ggml_steps) return Ops<float>::rope_frequencies(layer, positions);
    return formats::llama_cpp_rope_frequencies(config_, layer, model::rope_base(config_, layer), positions);
  }

  void activation(const Mat<float>& x, const model::Xielu& xielu, Mat<float>& out) override {
    if (!gelu_table()) return Ops<float>::activation(x, xielu, out);
    gelu_as_llama_cpp(x, out);
  }
  void gated_activation(const Mat<float>& gate, const Mat<float>& up, Mat<float>& out) override {
    if (!gelu_table()) return Ops<float>::gated_activation(gate, up, out);
    gelu_mul_as_llama_cpp(gate, up, out);
  }

  void attention(const Mat<float>& q, const Mat<float>& k_cache, const Mat<float>& v_cache, int layer, int first_pos,
                 const AttentionExtras<float>& extras, Mat<float>& out) override;

  void round_stored(Mat<float>& m) const override { round_matrix(r_.stored, m); }
  void round_cached(Eigen::Map<Mat<float>> rows) const override {
    if (r_.kv != Storage::f32) round_matrix(r_.kv, rows);
  }

 private:
  bool gelu_table() const { return r_.ggml_steps && formats::llama_cpp_gelu_by_table(config_.block); }
  // What the kernel's name adds to the math's: the roundings.
  std::string suffix(model::Op op) const;

  Roundings r_;
  Mat<float> rounded_;  // a product's input as the emulated engine converts it
  // llama.cpp-vulkan: the weights as its mat-mat kernels' f16 tiles hold them, made once (its
  // mat-vec kernels read the engine's).
  std::optional<WeightStore<float>> f16_tiles_;
};

std::string EmulatedOps::suffix(model::Op op) const {
  const std::string rounding = r_.stored == Storage::f32 ? "" : fmt::format("+round-{}", storage_name(r_.stored));
  const auto also = [](Storage s, const char* what) {
    return s == Storage::f32 ? std::string() : fmt::format("+{}-{}", storage_name(s), what);
  };
  switch (model::op_class(op)) {
    case model::OpClass::gemm:
      if (r_.llama_cpp_dot_types) return "+llama.cpp-dot-type";
      if (r_.f16_tile_rows > 0) return fmt::format("+llama.cpp-vulkan-f16-tiles-from-{}-rows", r_.f16_tile_rows);
      return rounding + also(r_.activations, "products") + (r_.f16_sums ? "+f16-sums" : "");
    case model::OpClass::attention:
      if (r_.ggml_steps) return "+llama.cpp-f16-kv";
      if (r_.f16_tile_attention) return "+llama.cpp-vulkan-f16-kv-and-tiles";
      return rounding + (r_.kv != r_.stored ? also(r_.kv, "kv") : "");
    case model::OpClass::activation:
      if (gelu_table()) return "+llama.cpp-f16-gelu-table";
      return rounding;
    case model::OpClass::experts:
    case model::OpClass::routing:
    case model::OpClass::embedding:
    case model::OpClass::norm:
    case model::OpClass::rope:
    case model::OpClass::residual: return rounding;
  }
  return {};
}

// x rounded as the emulated engine converts a product's input: to its weight type's dot-product
// type (llama.cpp's CPU backend), to f16 tiles (its Vulkan mat-mat kernels), or to the activations'
// storage; the sums as it adds them.
void EmulatedOps::product(const Mat<float>& x, model::WeightKind matrix, int layer, const float* bias,
                          Mat<float>& out) {
  const ConstMatMap<float> w = weights_.get(matrix, layer).matrix();
  if (r_.llama_cpp_dot_types) {
    const model::WeightTensor& stored = model_.weight(matrix, layer);
    const DotType type = formats::dot_type(stored.dtype);
    rounded_ = x;
    Mat<float> correction;
    if (type == DotType::q8_1) correction = q8_1_sum_correction(x, stored);
    round_to_dot_type(type, rounded_);
    matmul<float>(rounded_, w, bias, out);
    if (type == DotType::q8_1) out += correction;
    return;
  }
  if (r_.f16_tile_rows > 0 && x.rows() >= r_.f16_tile_rows) {
    rounded_ = x;
    round_matrix(Storage::f16, rounded_);
    const ConstMatMap<float> tile = f16_tiles_->get(matrix, layer).matrix();
    if (model_.weight(matrix, layer).dtype == model::DType::f32) return matmul<float>(rounded_, tile, bias, out);
    return matmul_f16_sums(rounded_, tile, bias, 1, out);
  }
  if (is_layer_product(matrix) && (r_.activations != Storage::f32 || r_.f16_sums)) {
    rounded_ = x;
    round_matrix(r_.activations, rounded_);
    if (r_.f16_sums) return matmul_f16_sums(rounded_, w, bias, kTensorCoreDepth, out);
    return matmul<float>(rounded_, w, bias, out);
  }
  matmul<float>(x, w, bias, out);
}

// llama.cpp's attention scale and f16 operands; some of its graphs scale Q in f32 before the
// attention rounds it to f16. Its Vulkan mat-mat kernels' f16 tiles for chunks of 2 rows or more.
void EmulatedOps::attention(const Mat<float>& q, const Mat<float>& k_cache, const Mat<float>& v_cache, int layer,
                            int first_pos, const AttentionExtras<float>& extras, Mat<float>& out) {
  if (!r_.llama_cpp_graph) return Ops<float>::attention(q, k_cache, v_cache, layer, first_pos, extras, out);
  const double scale = formats::llama_cpp_attention_scale(config_);
  const bool tiles = r_.f16_tile_attention && q.rows() >= 2;
  const AttentionRounding rounding{.f16_operands = r_.ggml_steps || tiles, .f16_value_sums = tiles};
  if (formats::llama_cpp_scales_q_first(config_))
    return attend(q * scale, k_cache, v_cache, layer, first_pos, 1.0, extras, rounding, out);
  attend(q, k_cache, v_cache, layer, first_pos, scale, extras, rounding, out);
}

}  // namespace

std::unique_ptr<Ops<float>> make_emulated_ops(const model::Model& model, WeightStore<float>& weights,
                                              model::Precision precision, std::uint64_t weight_budget) {
  return std::make_unique<EmulatedOps>(model, weights, precision, weight_budget);
}

}  // namespace tapdiff::reference
