#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/load_model.h"
#include "formats/safetensors_reader.h"
#include "model/errors.h"
#include "model/weights.h"
#include "tests/model_file_fixtures.h"
#include "tests/test_support.h"
#include "text/load_vocabulary.h"

namespace tapdiff::formats {

using namespace model;

namespace {

std::vector<float> row_values(const WeightTensor& t, std::int64_t r) {
  std::vector<float> out(static_cast<std::size_t>(t.cols));
  dequantize_row(t.dtype, t.row(r), out.data(), t.cols);
  return out;
}

TEST(Safetensors, LoadsStories260KFolder) {
  TAPDIFF_REQUIRE_STORIES();
  const auto model = load_model(testing::stories_hf());
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.family, model::Family::llama);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.vocab, 512);
  EXPECT_EQ(c.context_length, 512);
  EXPECT_EQ(c.rope_base, 10000.0);
  EXPECT_NEAR(c.norm_eps, 1e-5, 1e-12);
  EXPECT_EQ(c.rope_style, RopeStyle::rotate_half);
  EXPECT_TRUE(c.tied_output);
  EXPECT_FALSE(c.block.qkv_bias);
  EXPECT_EQ(c.bos_token, 1);
  EXPECT_EQ(c.eos_token, 2);
  EXPECT_FALSE(text::load_vocabulary(*model).has_value());
  EXPECT_EQ(model->find(WeightKind::output), nullptr);
  EXPECT_EQ(model->weight(WeightKind::ffn_down, 2).name, "model.layers.2.mlp.down_proj.weight");
}

// The same weights in both files: equal elementwise, except q/k rows in the rotate-half order:
// HF row h*d + i is GGUF row h*d + 2i for i < d/2 and h*d + 2(i - d/2) + 1 otherwise.
TEST(Safetensors, Stories260KWeightsEqualTheGgufOnes) {
  TAPDIFF_REQUIRE_STORIES();
  const auto gguf = load_model(testing::stories_gguf());
  const auto hf = load_model(testing::stories_hf());
  auto same = [&](WeightKind kind, int layer) {
    const WeightTensor& a = gguf->weight(kind, layer);
    const WeightTensor& b = hf->weight(kind, layer);
    ASSERT_EQ(a.rows, b.rows);
    for (std::int64_t r = 0; r < a.rows; ++r) ASSERT_EQ(row_values(a, r), row_values(b, r)) << a.name << " row " << r;
  };
  same(WeightKind::token_embd, -1);
  same(WeightKind::output_norm, -1);
  for (int l = 0; l < 5; ++l)
    for (WeightKind k : {WeightKind::attn_norm, WeightKind::wv, WeightKind::wo, WeightKind::ffn_norm,
                         WeightKind::ffn_gate, WeightKind::ffn_up, WeightKind::ffn_down})
      same(k, l);
  const int d = 8;
  for (auto [kind, heads] : {std::pair{WeightKind::wq, 8}, std::pair{WeightKind::wk, 4}}) {
    const WeightTensor& a = gguf->weight(kind, 3);
    const WeightTensor& b = hf->weight(kind, 3);
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < d; ++i) {
        const int from = h * d + (i < d / 2 ? 2 * i : 2 * (i - d / 2) + 1);
        ASSERT_EQ(row_values(b, h * d + i), row_values(a, from)) << b.name << " row " << h * d + i;
      }
  }
}

TEST(Safetensors, ParsesHeaderAndMetadata) {
  TAPDIFF_REQUIRE_STORIES();
  const SafetensorsFile f(testing::stories_hf() / "model.safetensors");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const SafetensorsTensor* t = f.find("model.layers.0.mlp.down_proj.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype_name, "F32");
  EXPECT_EQ(t->shape, (std::vector<std::int64_t>{64, 172}));
  EXPECT_EQ(t->bytes.size(), 64u * 172u * 4u);
}

TEST(Safetensors, ShardedFolderWithHalfPrecisionTensors) {
  auto hf = testing::tiny_hf();
  // Store the embedding as BF16 and layer 0's q_proj as F16.
  for (auto& [dtype, index] : {std::pair{std::string("BF16"), 0}, std::pair{std::string("F16"), 3}}) {
    auto& t = hf.tensors[static_cast<std::size_t>(index)];
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    std::vector<std::byte> out(v.size() * 2);
    quantize_row(dtype == "BF16" ? DType::bf16 : DType::f16, v.data(), out.data(), static_cast<std::int64_t>(v.size()));
    t.dtype = dtype;
    t.data = std::move(out);
  }
  const auto folder = testing::temp_dir("hf");
  testing::write_hf_folder(folder, hf, 3);
  const auto model = load_model(folder);
  EXPECT_EQ(model->weight(WeightKind::token_embd).dtype, DType::bf16);
  EXPECT_EQ(model->weight(WeightKind::wq, 0).dtype, DType::f16);
  EXPECT_EQ(model->weight(WeightKind::wk, 1).dtype, DType::f32);
  EXPECT_EQ(row_values(model->weight(WeightKind::token_embd), 0)[0], 0.0f);
  EXPECT_EQ(row_values(model->weight(WeightKind::ffn_down, 1), 1)[0], static_cast<float>(96) * 0.001f + 19.0f);
  EXPECT_EQ(model->config().eos_token, 2);
  EXPECT_TRUE(model->config().tied_output);
  EXPECT_EQ(model->sha256().size(), 64u);
}

TEST(Safetensors, ConfigOfQwen2AndMistral) {
  nlohmann::json j = testing::tiny_hf().config;
  j["model_type"] = "qwen2";
  j["sliding_window"] = 4096;
  j["use_sliding_window"] = false;
  ModelConfig c = hf_config(j, "config.json");
  EXPECT_TRUE(c.block.qkv_bias);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.rope_style, RopeStyle::rotate_half);
  j["use_sliding_window"] = true;  // layers >= max_window_layers (default 28) slide: none of 2
  EXPECT_EQ(hf_config(j, "config.json").sliding_window, 0);
  j["max_window_layers"] = 0;
  EXPECT_EQ(hf_config(j, "config.json").sliding_window, 4096);
  j["max_window_layers"] = 1;  // one layer full, one sliding
  c = hf_config(j, "config.json");
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{false, true}));
  EXPECT_EQ(key_span(c, 0).window, 0);
  EXPECT_EQ(key_span(c, 1).window, 4096);
  j["layer_types"] = {"sliding_attention", "full_attention"};  // 5.x: the list decides
  EXPECT_EQ(hf_config(j, "config.json").sliding_layers, (std::vector<bool>{true, false}));
  j["layer_types"] = {"sliding_attention", "chunked_attention"};
  EXPECT_THROW(hf_config(j, "config.json"), FormatError);
  j.erase("layer_types");
  j.erase("max_window_layers");
  j["model_type"] = "mistral";
  j.erase("use_sliding_window");
  j["head_dim"] = 32;
  c = hf_config(j, "config.json");
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_FALSE(c.block.qkv_bias);
  EXPECT_EQ(c.head_dim, 32);
  j["sliding_window"] = nullptr;
  j["model_type"] = "llama";
  j.erase("num_key_value_heads");
  c = hf_config(j, "config.json");
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_FALSE(c.block.qkv_bias);
  EXPECT_EQ(c.n_kv_heads, 4);
}

}  // namespace
}  // namespace tapdiff::formats
