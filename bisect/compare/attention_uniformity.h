#pragma once
// Has an engine's attention collapsed to uniform weights? Uniform weights make the output at
// position p the plain mean of the value rows 0..p. Fed the truth's values and both engines'
// attention outputs as a single sequence runs (chunk by chunk, in position order), this measures
// how far each engine's output is from that mean: an engine whose output sits on it while the
// truth's does not has lost its scores (a zero scale, scores overwritten, a mask that hides
// everything but adds the same bias).
#include <vector>

#include "model/config.h"
#include "model/engine.h"
#include "model/host_tensor.h"

namespace tapdiff::bisect {

struct UniformityStats {
  double b_to_uniform = 0;  // sum over compared elements of (b - mean of values)^2
  double a_to_uniform = 0;  // the same for the truth
  double b_to_a = 0;        // sum of (b - a)^2
  std::int64_t rows = 0;
  // B sits on the uniform mean: its squared distance is below 1e-3 of the truth's. Merely flatter
  // scores are not enough: scores scaled down by s move the output towards the mean by about s
  // (s^2 in squared distance) while they are small, so a 1/d-for-1/sqrt(d) scale on small
  // heads (s = 4 at d = 16) gives 1/16 and must not count; a zero scale gives ~1e-14.
  bool collapsed() const { return a_to_uniform > 0 && b_to_uniform <= kCollapsedShare * a_to_uniform; }
  static constexpr double kCollapsedShare = 1e-3;
};

class AttentionUniformity {
 public:
  explicit AttentionUniformity(const model::ModelConfig& config);
  // Whether each layer's cached values are its own v_proj's output (no value norm, no layer
  // attending over another's cache), which this measure takes them to be.
  static bool applies(const model::ModelConfig& config);

  // A chunk's value rows of one layer (the truth's v_proj), [rows, kv_dim]; then the chunk's
  // attention outputs of both engines, [rows, heads * head_dim].
  void add_values(int layer, const model::HostTensor& v);
  void add_attention(int layer, const model::HostTensor& a, const model::HostTensor& b);

  const UniformityStats& stats(int layer) const { return layers_[static_cast<std::size_t>(layer)].stats; }

 private:
  struct Layer {
    std::vector<double> sum;    // of every value row so far, [kv_dim]
    std::int64_t count = 0;     // value rows in sum
    model::HostTensor pending;  // the current chunk's value rows, not yet in sum
    UniformityStats stats;
  };
  const model::ModelConfig config_;
  std::vector<Layer> layers_;
};

}  // namespace tapdiff::bisect
