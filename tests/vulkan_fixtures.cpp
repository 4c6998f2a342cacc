#include "tests/vulkan_fixtures.h"

#include <gtest/gtest.h>

#include <cmath>

#include "formats/load_model.h"
#include "tests/reference_fixtures.h"

namespace tapdiff::testing {

std::unique_ptr<gpu::VulkanEngine> validated_vulkan_engine(const model::Model& m, gpu::VulkanEngineOptions options) {
  options.validation = true;
  return gpu::make_vulkan_engine(m, options);
}

void expect_clean(const gpu::VulkanEngine& engine) {
  EXPECT_TRUE(engine.validation_enabled());
  for (const std::string& msg : engine.validation_messages()) ADD_FAILURE() << msg;
}

formats::SynthOptions fault_synth_model(const gpu::FaultInfo& fault) {
  const bool experts = fault.op_class == model::OpClass::routing || fault.op_class == model::OpClass::experts;
  formats::SynthOptions options;
  options.config = formats::synth_shape(experts ? "tiny-moe" : "tiny");
  if (fault.ops.front() == model::Op::moe_shared) options.config.family = model::Family::qwen2_moe;
  if (fault.fault == gpu::Fault::selection_bias_sign || fault.fault == gpu::Fault::group_limit_ignored)
    options.config.family = model::Family::glm4_moe;
  if (fault.fault == gpu::Fault::sinks_dropped || fault.fault == gpu::Fault::swiglu_unclamped) {
    options.config = formats::synth_shape("tiny-moe");
    options.config.family = model::Family::gpt_oss;
  }
  if (fault.fault == gpu::Fault::chunk_boundary) options.config.attention_chunk = 6;
  if (fault.fault == gpu::Fault::mla_rope_channels || fault.fault == gpu::Fault::mscale_missing) {
    options.config = formats::synth_shape("tiny-mla");
    // the scores' scale of a YaRN-scaled DeepSeek: qk_head_dim^-1/2 times an mscale^2 of 1.3
    options.config.block.attention_scale = 1.3 / std::sqrt(static_cast<double>(options.config.head_dim));
  }
  return options;
}

std::unique_ptr<model::Model> load_fault_model(const std::filesystem::path& synth_file,
                                               const formats::SynthOptions& options) {
  auto m = formats::load_model(synth_file);
  if (options.config.attention_chunk == 0 && options.config.block.attention_scale == 0) return m;
  model::ModelConfig config = m->config();
  config.attention_chunk = options.config.attention_chunk;
  if (options.config.block.attention_scale > 0) config.block.attention_scale = options.config.block.attention_scale;
  static std::vector<std::unique_ptr<model::Model>> bases;  // the copies' weights stay in their files
  bases.push_back(std::move(m));
  return model_with_config(*bases.back(), config);
}

}  // namespace tapdiff::testing
