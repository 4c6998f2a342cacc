#pragma once
// Qwen2's sliding windows, which Qwen3's and Qwen3-MoE's read too.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// A window only where use_sliding_window is set; 4.x configs slide the layers from
// max_window_layers on.
void read_qwen2_windows(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
