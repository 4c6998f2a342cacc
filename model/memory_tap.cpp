#include "model/memory_tap.h"

#include <algorithm>

#include "model/errors.h"

namespace tapdiff::model {

void MemoryTap::record(const TapKey& k, const HostTensor& value) {
  auto it = tensors_.find(key(k.id));
  if (it == tensors_.end()) {
    tensors_.emplace(key(k.id), value);
    return;
  }
  HostTensor& old = it->second;
  TAPDIFF_ASSERT(old.cols() == value.cols() && old.scalar() == value.scalar(), "{}: width {} then {}", to_string(k.id),
                 old.cols(), value.cols());
  HostTensor grown(old.scalar(), old.rows() + value.rows(), old.cols());
  if (old.scalar() == Scalar::f32) {
    std::copy(old.f32().begin(), old.f32().end(), grown.f32().begin());
    std::copy(value.f32().begin(), value.f32().end(), grown.f32().begin() + old.size());
  } else {
    std::copy(old.f64().begin(), old.f64().end(), grown.f64().begin());
    std::copy(value.f64().begin(), value.f64().end(), grown.f64().begin() + old.size());
  }
  old = std::move(grown);
}

const HostTensor& MemoryTap::get(const TensorId& id) const {
  auto it = tensors_.find(key(id));
  TAPDIFF_ASSERT(it != tensors_.end(), "{} was not recorded", to_string(id));
  return it->second;
}

}  // namespace tapdiff::model
