#pragma once
// The pieces of a model config whose layers differ from one another or carry more than a plain
// decoder layer (Gemma 4's), named for the llama.cpp emulation, which does not round them, to
// refuse by name.
#include <string_view>

#include "model/config.h"

namespace tapdiff::model {

// The first such piece of `config`, as a refusal names it ("the values' norm (Gemma 4's v_norm)");
// empty where it has none: the values' norm, per-layer inputs, KV sharing, layer output scales,
// layers' own heads, layers' own FFN widths, a mixture beside the dense FFN, experts' weight scales.
std::string_view layer_feature(const ModelConfig& config);

}  // namespace tapdiff::model
