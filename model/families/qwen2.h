#pragma once
// Qwen2's sliding windows, which Qwen3's and Qwen3-MoE's read too.
#include "model/config.h"
#include "model/hf_keys.h"

namespace tapdiff::model {

// A window only where use_sliding_window is set; 4.x configs slide the layers from
// max_window_layers on.
void read_qwen2_windows(KeyReader& k, ModelConfig& c);

}  // namespace tapdiff::model
