#pragma once
// A tap that keeps the wanted op outputs in memory, rows of successive chunks appended, so each
// tensor holds [positions so far, width]. For tests and in-process comparison of small runs.
#include <functional>
#include <map>
#include <utility>

#include "model/engine.h"

namespace tapdiff::model {

class MemoryTap final : public Tap {
 public:
  // Wants every op for which `filter` is true (every op when none is given).
  explicit MemoryTap(std::function<bool(const TensorId&)> filter = {}) : filter_(std::move(filter)) {}

  bool wants(const TapKey& key) const override { return !filter_ || filter_(key.id); }
  void record(const TapKey& key, const HostTensor& value) override;

  // The tensor's rows so far; asserts it was recorded.
  const HostTensor& get(const TensorId& id) const;
  bool has(const TensorId& id) const { return tensors_.count(key(id)) != 0; }

 private:
  static std::pair<int, int> key(const TensorId& id) { return {id.layer, static_cast<int>(id.op)}; }
  std::function<bool(const TensorId&)> filter_;
  std::map<std::pair<int, int>, HostTensor> tensors_;
};

}  // namespace tapdiff::model
