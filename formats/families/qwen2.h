#pragma once
// Qwen2's sliding windows, which Qwen3's and Qwen3-MoE's read too, and the choice of MoE layers
// Qwen2-MoE and Qwen3-MoE share.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// A window only where use_sliding_window is set; 4.x configs slide the layers from
// max_window_layers on.
void read_qwen2_windows(KeyReader& k, model::ModelConfig& c);

// Which layers of a Qwen MoE are mixtures, as its decoder layer chooses: every layer not listed in
// mlp_only_layers whose number + 1 is a multiple of decoder_sparse_step, where experts.count > 0.
// None: c.experts cleared (every layer dense); all: experts.layers left empty.
void read_qwen_moe_layers(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
