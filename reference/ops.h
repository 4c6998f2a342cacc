#pragma once
// How the reference computes the ops whose arithmetic a precision changes. Ops<S> is the math, in
// f64 or f32: what the model's own library computes, written once. An emulated engine (f16, bf16,
// fp8, llama.cpp's CPU and Vulkan backends: emulated_ops.h) overrides only what it rounds and
// where. The engine (cpu_engine.cpp) holds the state (op outputs, KV cache) and calls these.
#include <memory>
#include <string>

#include "model/block.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/precision.h"
#include "model/rope.h"
#include "model/weights.h"
#include "reference/eigen_types.h"
#include "reference/kernels.h"
#include "reference/weight_store.h"

namespace tapdiff::reference {

template <typename S>
class Ops {
 public:
  using VecMap = Eigen::Map<const Vec<S>>;

  Ops(const model::Model& model, WeightStore<S>& weights) : model_(model), config_(model.config()), weights_(weights) {}
  virtual ~Ops() = default;
  Ops(const Ops&) = delete;
  Ops& operator=(const Ops&) = delete;

  // The kernel variant that runs op, as dumps name it ("eigen-gemm").
  virtual std::string kernel(model::Op op) const;
  // What the device string adds ("" for the math).
  virtual std::string rounds_as() const { return {}; }

  // The block's norm of each row (w, bias: the op's), or of each run of the weight's width (q/k norms).
  virtual void norm(const Mat<S>& x, const VecMap& w, const S* bias, double eps, Mat<S>& out);
  virtual void head_norm(const Mat<S>& x, const VecMap& w, Mat<S>& out);
  // out = x W^T (+ bias), W the layer's matrix of that kind (layer -1: a global one).
  virtual void product(const Mat<S>& x, model::WeightKind matrix, int layer, const S* bias, Mat<S>& out);
  // The angles of the layer's keys at positions [0, positions) (the queries': model::query_frequencies).
  virtual model::RopeFrequencies rope_frequencies(int layer, int positions) const;
  // A plain FFN's activation (xielu: the layer's scalars), and a gated FFN's act(gate) * up.
  virtual void activation(const Mat<S>& x, const model::Xielu& xielu, Mat<S>& out);
  virtual void gated_activation(const Mat<S>& gate, const Mat<S>& up, Mat<S>& out);
  // The chunk's queries q (rows at positions first_pos, ...) over the layer's cache rows; extras:
  // the layer's attention sinks, the positions its indexer kept (reference/kernels.h).
  virtual void attention(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int layer, int first_pos,
                         const AttentionExtras<S>& extras, Mat<S>& out);
  // What the emulated engine holds: each value stored (an op output, a teacher-forced value, a
  // cache row), and each K and V row entering its cache.
  virtual void round_stored(Mat<S>& m) const { (void)m; }
  virtual void round_cached(Eigen::Map<Mat<S>> rows) const { (void)rows; }

 protected:
  // The attention kernel with the layer's window and softcap, at this scale and rounding.
  void attend(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int layer, int first_pos, double scale,
              const AttentionExtras<S>& extras, AttentionRounding rounding, Mat<S>& out) const;

  const model::Model& model_;
  const model::ModelConfig& config_;
  WeightStore<S>& weights_;
};

extern template class Ops<float>;
extern template class Ops<double>;

// The ops of an engine computing in `precision`: the math for f64 and f32, else its emulation
// (S = float). weight_budget: what the emulation may hold of its own weight copies.
template <typename S>
std::unique_ptr<Ops<S>> make_ops(const model::Model& model, WeightStore<S>& weights, model::Precision precision,
                                 std::uint64_t weight_budget);

}  // namespace tapdiff::reference
