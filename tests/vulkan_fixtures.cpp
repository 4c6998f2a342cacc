#include "tests/vulkan_fixtures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/load_model.h"
#include "tests/model_file_fixtures.h"
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
  if (fault.fault == gpu::Fault::indexer_relu_dropped) {  // the shape's family and size only: write_sparse_model
    options.config = formats::synth_shape("tiny-mla");
    options.config.family = model::Family::deepseek_v32;
  }
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

std::filesystem::path write_sparse_model(const std::filesystem::path& folder, int layers) {
  constexpr std::int64_t dim = 64, vocab = 512, heads = 4, q_rank = 32, kv_rank = 24, nope = 16, rope = 8, v = 16,
                         ffn = 96, index_heads = 4, index_dim = 16;
  TinyHf hf;
  hf.config = {{"model_type", "deepseek_v32"},
               {"hidden_size", dim},
               {"num_hidden_layers", layers},
               {"num_attention_heads", heads},
               {"num_key_value_heads", heads},
               {"intermediate_size", ffn},
               {"vocab_size", vocab},
               {"rms_norm_eps", 1e-6},
               {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
               {"tie_word_embeddings", false},
               {"q_lora_rank", q_rank},
               {"kv_lora_rank", kv_rank},
               {"qk_nope_head_dim", nope},
               {"qk_rope_head_dim", rope},
               {"v_head_dim", v},
               {"n_routed_experts", 4},
               {"num_experts_per_tok", 2},
               {"moe_intermediate_size", 32},
               {"n_group", 1},
               {"topk_group", 1},
               {"first_k_dense_replace", layers},
               {"index_n_heads", index_heads},
               {"index_head_dim", index_dim},
               {"index_topk", 12},
               {"bos_token_id", 1},
               {"eos_token_id", 2}};
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  const auto uniform = [&] {  // in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(static_cast<double>(state >> 11) / 4503599627370496.0 - 1.0);
  };
  // A matrix [rows, cols] of spread 1/sqrt(cols), or a vector [rows] of `center` +- spread.
  const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float center, float spread) {
    const std::int64_t n = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    std::vector<float> values(static_cast<std::size_t>(n));
    for (float& x : values) x = center + spread * uniform();
    std::vector<std::byte> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    hf.tensors.push_back({name, "F32", std::move(shape), std::move(bytes)});
  };
  const auto matrix = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
    add(name, {rows, cols}, 0.0F, static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols))));
  };
  matrix("model.embed_tokens.weight", vocab, dim);
  add("model.norm.weight", {dim}, 1.0F, 0.2F);
  matrix("lm_head.weight", vocab, dim);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {dim}, 1.0F, 0.2F);
    add(p + "post_attention_layernorm.weight", {dim}, 1.0F, 0.2F);
    matrix(p + "self_attn.q_a_proj.weight", q_rank, dim);
    add(p + "self_attn.q_a_layernorm.weight", {q_rank}, 1.0F, 0.2F);
    matrix(p + "self_attn.q_b_proj.weight", heads * (nope + rope), q_rank);
    matrix(p + "self_attn.kv_a_proj_with_mqa.weight", kv_rank + rope, dim);
    add(p + "self_attn.kv_a_layernorm.weight", {kv_rank}, 1.0F, 0.2F);
    matrix(p + "self_attn.kv_b_proj.weight", heads * (nope + v), kv_rank);
    matrix(p + "self_attn.o_proj.weight", dim, heads * v);
    matrix(p + "self_attn.indexer.wq_b.weight", index_heads * index_dim, q_rank);
    matrix(p + "self_attn.indexer.wk.weight", index_dim, dim);
    add(p + "self_attn.indexer.k_norm.weight", {index_dim}, 1.0F, 0.2F);
    add(p + "self_attn.indexer.k_norm.bias", {index_dim}, 0.0F, 0.1F);
    matrix(p + "self_attn.indexer.weights_proj.weight", index_heads, dim);
    matrix(p + "mlp.gate_proj.weight", ffn, dim);
    matrix(p + "mlp.up_proj.weight", ffn, dim);
    matrix(p + "mlp.down_proj.weight", dim, ffn);
  }
  std::filesystem::create_directories(folder);
  write_hf_folder(folder, hf);
  return folder;
}

}  // namespace tapdiff::testing
