#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "formats/gguf_keys.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "formats/load_model.h"
#include "formats/synth.h"
#include "model/errors.h"
#include "model/weights.h"
#include "tests/model_file_fixtures.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "text/load_vocabulary.h"
#include "text/vocabulary.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using testing::TinyGguf;
using testing::write_tiny_gguf;

std::vector<float> dequantize(const WeightTensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.rows * t.cols));
  for (std::int64_t r = 0; r < t.rows; ++r) dequantize_row(t.dtype, t.row(r), out.data() + r * t.cols, t.cols);
  return out;
}

// The largest error the format allows for element i of `x` (blocks of 32 along rows of `cols`).
float error_bound(DType t, const std::vector<float>& x, std::size_t i) {
  if (t == DType::f32) return 0.0f;
  if (t == DType::f16) return std::fabs(x[i]) * 0x1p-11f + 0x1p-25f;
  if (t == DType::bf16) return std::fabs(x[i]) * 0x1p-8f;
  float amax = 0.0f;
  for (std::size_t j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  if (t == DType::q8_0) return amax / 127.0f * (0.5f + 127.0f * 0x1p-11f) + 1e-7f;
  return amax / 8.0f * (1.0f + 8.0f * 0x1p-11f) + 1e-7f;  // q4_0
}

TEST(Gguf, LoadsStories260K) {
  TAPDIFF_REQUIRE_STORIES();
  const auto model = load_model(testing::stories_gguf());
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.family, model::Family::llama);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.vocab, 512);
  EXPECT_EQ(c.context_length, 2048);
  EXPECT_EQ(c.rope_base, 10000.0);
  EXPECT_NEAR(c.norm_eps, 1e-5, 1e-12);
  EXPECT_EQ(c.rope_style, RopeStyle::interleaved);
  EXPECT_FALSE(c.tied_output);
  EXPECT_FALSE(c.block.qkv_bias);
  EXPECT_EQ(c.bos_token, 1);
  EXPECT_EQ(c.eos_token, 2);
  const std::optional<text::Vocabulary> vocabulary = text::load_vocabulary(*model);
  ASSERT_TRUE(vocabulary.has_value());
  const text::Vocabulary& v = *vocabulary;
  EXPECT_EQ(v.model, "llama");
  ASSERT_EQ(v.tokens.size(), 512u);
  EXPECT_EQ(v.tokens[1], "<s>");
  EXPECT_EQ(v.scores.size(), 512u);
  EXPECT_EQ(v.types[0], 2);
  EXPECT_EQ(v.bos, 1);
  EXPECT_EQ(v.eos, 2);
  EXPECT_EQ(v.unk, 0);
  EXPECT_TRUE(v.add_bos);
  EXPECT_EQ(v.space_prefix, text::SpacePrefix::every_fragment);
  const WeightTensor& wq = model->weight(WeightKind::wq, 0);
  EXPECT_EQ(wq.name, "blk.0.attn_q.weight");
  EXPECT_EQ(wq.rows, 64);
  EXPECT_EQ(wq.cols, 64);
  EXPECT_EQ(model->weight(WeightKind::ffn_down, 4).cols, 172);
  EXPECT_EQ(model->sha256(), "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
  // The GGUF stores output.weight as an exact copy of token_embd.weight.
  EXPECT_EQ(dequantize(model->weight(WeightKind::output)), dequantize(model->weight(WeightKind::token_embd)));
}

TEST(Gguf, RawMetadataOfStories260K) {
  TAPDIFF_REQUIRE_STORIES();
  const GgufFile f(testing::stories_gguf());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.rope.dimension_count"), 8);
  EXPECT_EQ(f.get_int("tokenizer.ggml.padding_token_id"), 4294967295);
  EXPECT_FALSE(f.get_int("llama.rope.freq_base").has_value());
  EXPECT_NEAR(*f.get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->at(2), "</s>");
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->to_string(2), "[string x 512] \"<unk>\" \"<s>\" ...");
  EXPECT_THROW(f.get_int("general.architecture"), FormatError);
  EXPECT_THROW(f.get_string_array("tokenizer.ggml.scores"), FormatError);
  const GgufTensorInfo* t = f.find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne, (std::vector<std::int64_t>{172, 64}));
  EXPECT_EQ(t->dtype, DType::f32);
  EXPECT_EQ(t->bytes.size(), 172u * 64u * 4u);
}

TEST(Gguf, RoundTripOfEveryDType) {
  TinyGguf spec;
  spec.dtypes = {{"output.weight", DType::q8_0},
                 {"blk.0.attn_q.weight", DType::q8_0},
                 {"blk.0.attn_k.weight", DType::q4_0},
                 {"blk.0.attn_v.weight", DType::f16},
                 {"blk.0.attn_output.weight", DType::bf16},
                 {"blk.0.ffn_gate.weight", DType::q4_0},
                 {"blk.0.ffn_up.weight", DType::q8_0},
                 {"blk.0.ffn_down.weight", DType::f16},
                 {"blk.1.ffn_norm.weight", DType::bf16}};
  const auto path = testing::temp_dir("gguf") / "tiny.gguf";
  const auto values = write_tiny_gguf(path, spec);
  const auto model = load_model(path);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.kv_dim(), 32);
  EXPECT_EQ(c.rope_base, 500000.0);
  EXPECT_NEAR(c.norm_eps, 1e-6, 1e-12);
  EXPECT_EQ(c.context_length, 128);
  EXPECT_EQ(text::load_vocabulary(*model)->space_prefix, text::SpacePrefix::none);
  const GgufFile raw(path);
  int checked = 0;
  for (const GgufTensorInfo& info : raw.tensors()) {
    EXPECT_EQ(info.offset % 32, 0u) << info.name;
    const auto d = spec.dtypes.find(info.name);
    const DType dtype = d == spec.dtypes.end() ? DType::f32 : d->second;
    EXPECT_EQ(info.dtype, dtype) << info.name;
    const std::vector<float>& want = values.at(info.name);
    const std::vector<float> got = dequantize(
        WeightTensor{info.name, info.dtype, info.ne.size() > 1 ? info.ne[1] : 1, info.ne[0], info.bytes, {}});
    ASSERT_EQ(got.size(), want.size()) << info.name;
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - want[i]), error_bound(dtype, want, i)) << info.name << " element " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 3 + 2 * 9);
  const WeightTensor& wk = model->weight(WeightKind::wk, 0);
  EXPECT_EQ(wk.dtype, DType::q4_0);
  EXPECT_EQ(wk.rows, 32);
  EXPECT_EQ(wk.cols, 64);
  EXPECT_EQ(wk.bytes.size(), 32u * 2u * 18u);
}

// synth's q4_k_m stores each tensor as llama.cpp's quantizer does for LLAMA_FTYPE_MOSTLY_Q4_K_M:
// output Q6_K; attn_v and ffn_down Q6_K on the layers use_more_bits picks (of 8: 0, 3, 6, 7);
// every other matrix Q4_K; norms F32.
TEST(Gguf, SynthQ4KMMixesTypesAsLlamaCpp) {
  SynthOptions o;
  o.config = synth_shape("small");
  o.config.n_layers = 8, o.config.ffn_dim = 512;
  ASSERT_TRUE(set_synth_storage(o, "q4_k_m"));
  EXPECT_FALSE(set_synth_storage(o, "q6_k_m"));
  const auto path = testing::temp_dir("gguf") / "q4_k_m.gguf";
  write_synth_model(path, o);
  const std::set<int> more_bits{0, 3, 6, 7};
  std::map<DType, int> counts;
  const GgufFile file(path);
  for (const GgufTensorInfo& t : file.tensors()) {
    ++counts[t.dtype];
    if (t.ne.size() == 1) {
      EXPECT_EQ(t.dtype, DType::f32) << t.name;
      continue;
    }
    const int layer = t.name.starts_with("blk.") ? std::stoi(t.name.substr(4)) : -1;
    const bool wider =
        t.name == "output.weight" ||
        (more_bits.count(layer) != 0 && (t.name.ends_with("attn_v.weight") || t.name.ends_with("ffn_down.weight")));
    EXPECT_EQ(t.dtype, wider ? DType::q6_k : DType::q4_k) << t.name;
  }
  EXPECT_EQ(counts[DType::q6_k], 1 + 2 * 4);
  EXPECT_EQ(counts[DType::q4_k], 1 + 7 * 8 - 2 * 4);
}

TEST(Gguf, WriterLaysOutHeaderAndAlignedData) {
  const auto path = testing::temp_dir("gguf") / "meta.gguf";
  GgufWriter w(path);
  w.add_string("general.name", "tiny \"model\"");
  w.add_u32("a.u32", 4000000000u);
  w.add_i32("a.i32", -7);
  w.add_f32("a.f32", 0.25f);
  w.add_bool("a.bool", true);
  w.add_i32_array("a.ints", {1, -2, 3});
  w.add_tensor("t0", DType::f16, {3});
  w.add_tensor("t1", DType::q8_0, {32, 2});
  const std::vector<std::byte> t0(6, std::byte{1}), t1(68, std::byte{2});
  w.write_tensor_data(t0);
  w.write_tensor_data(t1);
  w.finish();
  const GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.name"), "tiny \"model\"");
  EXPECT_EQ(f.get_int("a.u32"), 4000000000);
  EXPECT_EQ(f.find("a.u32")->type, gguf::ValueType::u32);
  EXPECT_EQ(f.get_int("a.i32"), -7);
  EXPECT_EQ(f.get_float("a.f32"), 0.25);
  EXPECT_EQ(f.get_bool("a.bool"), true);
  EXPECT_EQ(f.get_int_array("a.ints"), (std::vector<std::int32_t>{1, -2, 3}));
  EXPECT_EQ(f.data_offset() % 32, 0u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].offset, 0u);
  EXPECT_EQ(f.tensors()[1].offset, 32u);
  EXPECT_EQ(f.tensors()[1].ne, (std::vector<std::int64_t>{32, 2}));
  EXPECT_EQ(std::vector<std::byte>(f.tensors()[1].bytes.begin(), f.tensors()[1].bytes.end()), t1);
  EXPECT_EQ(f.file_size(), f.data_offset() + 32 + 96);  // each tensor padded to 32 bytes
}

TEST(Gguf, PerLayerKeysHoldOneValueOrOnePerLayer) {
  const auto path = testing::temp_dir("gguf") / "layers.gguf";
  GgufWriter w(path);
  w.add_u32("a.one", 7);
  w.add_i32_array("a.each", {4, 8, 4});
  w.add_i32_array("a.short", {4, 8});
  w.add_i32_array("a.negative", {4, -1, 4});
  w.finish();
  const GgufFile f(path);
  EXPECT_EQ(layer_int_key(f, "a.one", 3, std::nullopt), (std::vector<int>{7, 7, 7}));
  EXPECT_EQ(layer_int_key(f, "a.each", 3, std::nullopt), (std::vector<int>{4, 8, 4}));
  EXPECT_EQ(layer_int_key(f, "a.absent", 3, 2), (std::vector<int>{2, 2, 2}));
  const auto error = [&](const std::string& key) {
    try {
      layer_int_key(f, key, 3, std::nullopt);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("a.short").find("metadata 'a.short': expected 3 values (one per layer), found 2"), std::string::npos);
  EXPECT_NE(error("a.negative").find("metadata 'a.negative': expected integers >= 0, found -1"), std::string::npos);
  EXPECT_NE(error("a.absent").find("missing metadata key 'a.absent'"), std::string::npos);
}

TEST(Gguf, UnfinishedWriterLeavesNoFile) {
  const auto path = testing::temp_dir("gguf") / "partial.gguf";
  {
    GgufWriter w(path);
    w.add_tensor("t", DType::f32, {4});
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_THROW(GgufWriter(testing::temp_dir("gguf") / "no" / "such" / "dir.gguf"), EnvironmentError);
  GgufWriter w(testing::temp_dir("gguf") / "blocks.gguf");
  EXPECT_THROW(w.add_tensor("t", DType::q4_0, {48, 2}), UsageError);
}

TEST(Gguf, Qwen2UsesRotateHalfAndBiases) {
  TinyGguf spec;
  spec.arch = "qwen2";
  spec.qkv_bias = true;
  spec.omit_tensors = {"output.weight"};
  const auto path = testing::temp_dir("gguf") / "qwen2.gguf";
  write_tiny_gguf(path, spec);
  const auto model = load_model(path);
  EXPECT_EQ(model->config().rope_style, RopeStyle::rotate_half);
  EXPECT_TRUE(model->config().block.qkv_bias);
  EXPECT_TRUE(model->config().tied_output);
  EXPECT_EQ(model->weight(WeightKind::bk, 1).cols, 32);
  EXPECT_EQ(model->find(WeightKind::output), nullptr);
}

// A GGUF's LongRoPE (Phi-3) as llama.cpp computes it: the long or the short factors for the whole
// run, by whether its context exceeds the original one, whatever the pass's length; no engine runs
// the model until that context is given. (Read from a file and held to llama.cpp's tokens:
// tests/conformance/test_llama_cpp.py.)
TEST(Gguf, LongRopeTakesTheFactorsTheRunsContextPicks) {
  ModelConfig c = load_model(testing::synth_model_path("tiny"))->config();
  const std::size_t pairs = static_cast<std::size_t>(c.head_dim / 2);
  RopeScaling& s = c.rope_scaling;
  s.type = RopeType::longrope;
  s.original_context = 64;
  s.short_factor.assign(pairs, 1.25);
  s.long_factor.assign(pairs, 4.0);
  s.attention_factor = 1.5;
  s.by_run_context = true;
  const std::vector<double> plain =
      rope_frequencies(load_model(testing::synth_model_path("tiny"))->config(), 0, c.rope_base, 10).inv_freq;
  for (const auto& [context, factor] : {std::pair{32, 1.25}, std::pair{64, 1.25}, std::pair{512, 4.0}}) {
    s.run_context = context;
    c.validate("longrope");
    for (const std::int64_t seq_len : {10, 1000}) {  // the pass's length does not matter
      const RopeFrequencies f = rope_frequencies(c, 0, c.rope_base, seq_len);
      EXPECT_EQ(f.attention_factor, 1.5);
      for (std::size_t i = 0; i < pairs; ++i) EXPECT_DOUBLE_EQ(f.inv_freq[i], plain[i] / factor) << context << " " << i;
    }
  }
  s.run_context = 0;
  try {
    require_runnable(Model("phi3.gguf", c));
    ADD_FAILURE() << "a LongRoPE model without its run's context was runnable";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("phi3.gguf: its LongRoPE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("give that size with --context N"), std::string::npos) << e.what();
  }
}

TEST(Gguf, ReadsVersion2AndNestedArrays) {
  // A hand-written v2 file: one metadata key holding [[1, 2], [3]] (arrays of u8) and no tensors.
  std::vector<std::uint8_t> b = {'G', 'G', 'U', 'F', 2, 0, 0, 0};
  auto u64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  u64(0);  // tensors
  u64(1);  // metadata
  u64(6);
  for (char ch : std::string("nested")) b.push_back(static_cast<std::uint8_t>(ch));
  u32(9), u32(9), u64(2);  // array of 2 arrays
  u32(0), u64(2), b.push_back(1), b.push_back(2);
  u32(0), u64(1), b.push_back(3);
  const auto path = testing::temp_dir("gguf") / "v2.gguf";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  const GgufFile f(path);
  EXPECT_EQ(f.version(), 2u);
  const GgufValue* v = f.find("nested");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->array()->size(), 2u);
  EXPECT_EQ(v->element_type, gguf::ValueType::array);
  EXPECT_EQ(std::get<std::uint64_t>(v->array()->at(1).array()->at(0).value), 3u);
  EXPECT_EQ(v->to_string(), "[array x 2] [u8 x 2] 1 2 [u8 x 1] 3");
}

}  // namespace
}  // namespace tapdiff::formats
