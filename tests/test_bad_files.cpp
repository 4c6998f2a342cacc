// Every corrupt or unsupported model file must give a one-line FormatError naming the file,
// what was expected and what was found: never a crash, an assertion or an absurd allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "formats/load_model.h"
#include "formats/safetensors_reader.h"
#include "model/errors.h"
#include "model/weights.h"
#include "tests/model_file_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::formats {

using namespace model;

namespace {

namespace fs = std::filesystem;
using testing::TinyGguf;

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<std::uint8_t>& b) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

template <class T>
void patch(std::vector<std::uint8_t>& b, std::size_t pos, T value) {
  std::memcpy(b.data() + pos, &value, sizeof(T));
}

// The position just after a length-prefixed string `s` in a GGUF header.
std::size_t after_string(const std::vector<std::uint8_t>& b, const std::string& s) {
  std::vector<std::uint8_t> needle(8);
  const std::uint64_t n = s.size();
  std::memcpy(needle.data(), &n, 8);
  needle.insert(needle.end(), s.begin(), s.end());
  const auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  EXPECT_NE(it, b.end()) << s;
  return static_cast<std::size_t>(it - b.begin()) + needle.size();
}

// The message of the E that f() throws ("" and a failure when it throws none).
template <class E = FormatError, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

void expect_message(const std::string& msg, const fs::path& file, std::initializer_list<std::string_view> parts) {
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
  EXPECT_NE(msg.find(file.filename().string()), std::string::npos) << "does not name " << file << ": " << msg;
  for (std::string_view part : parts) EXPECT_NE(msg.find(part), std::string::npos) << "lacks '" << part << "': " << msg;
}

// A valid tiny GGUF (2 layers, f32) and its bytes.
struct GgufFixture {
  fs::path path;
  std::vector<std::uint8_t> bytes;
};

GgufFixture tiny_gguf(const TinyGguf& spec = {}) {
  GgufFixture f{testing::temp_dir("bad") / "model.gguf", {}};
  testing::write_tiny_gguf(f.path, spec);
  f.bytes = read_bytes(f.path);
  return f;
}

std::string load_error(const fs::path& p) {
  return error_of([&] { load_model(p); });
}

// Tensor info layout after the name: u32 n_dims, n_dims x u64, u32 type, u64 offset.
std::size_t type_pos(const GgufFixture& f, const std::string& tensor, int n_dims) {
  return after_string(f.bytes, tensor) + 4 + 8 * static_cast<std::size_t>(n_dims);
}

TEST(BadFile, GgufWrongMagic) {
  auto f = tiny_gguf();
  f.bytes[0] = 'X';
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path,
                 {"expected a GGUF file (magic 'GGUF') or a Hugging Face folder with config.json", "found", "'XGUF'"});
  expect_message(error_of([&] { GgufFile g(f.path); }), f.path, {"expected the magic 'GGUF'", "XGUF"});
}

TEST(BadFile, GgufUnsupportedVersion) {
  auto f = tiny_gguf();
  for (std::uint32_t version : {1u, 4u}) {
    patch(f.bytes, 4, version);
    write_bytes(f.path, f.bytes);
    expect_message(load_error(f.path), f.path, {fmt::format("unsupported GGUF version {}", version)});
  }
}

TEST(BadFile, GgufTruncatedHeaderAtEveryLength) {
  const auto f = tiny_gguf();
  const std::uint64_t header_end = GgufFile(f.path).data_offset();
  expect_message(error_of([&] {
                   write_bytes(f.path, {f.bytes.begin(), f.bytes.begin() + 200});
                   load_model(f.path);
                 }),
                 f.path, {"truncated", "bytes [", "but the file has 200 bytes"});
  for (std::size_t n = 4; n < header_end; n += 13) {
    write_bytes(f.path, {f.bytes.begin(), f.bytes.begin() + static_cast<std::ptrdiff_t>(n)});
    const std::string msg = load_error(f.path);
    ASSERT_NE(msg.find("truncated"), std::string::npos) << "at " << n << ": " << msg;
  }
}

TEST(BadFile, GgufTruncatedData) {
  auto f = tiny_gguf();
  f.bytes.erase(f.bytes.end() - 100, f.bytes.end());
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path,
                 {"truncated: tensor 'blk.1.ffn_down.weight'", "needs bytes [",
                  fmt::format("but the file has {} bytes", f.bytes.size())});
}

TEST(BadFile, GgufTensorOutsideTheFile) {
  auto f = tiny_gguf();
  patch(f.bytes, type_pos(f, "blk.0.attn_q.weight", 2) + 4, std::uint64_t{1} << 30);
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path,
                 {"truncated: tensor 'blk.0.attn_q.weight'", "needs bytes [", "but the file has"});
}

TEST(BadFile, GgufUnalignedDataOffset) {
  auto f = tiny_gguf();
  const std::size_t pos = type_pos(f, "blk.0.attn_k.weight", 2) + 4;
  std::uint64_t offset = 0;
  std::memcpy(&offset, f.bytes.data() + pos, 8);
  patch(f.bytes, pos, offset + 4);
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path, {"blk.0.attn_k.weight", "aligned to 32", std::to_string(offset + 4)});
}

TEST(BadFile, GgufUnknownTensorType) {
  auto f = tiny_gguf();
  patch(f.bytes, type_pos(f, "blk.0.attn_q.weight", 2), std::uint32_t{16});
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path,
                 {"tensor 'blk.0.attn_q.weight': type 16 (IQ2_XXS) is not supported", "Q4_K", "IQ4_XS"});
  patch(f.bytes, type_pos(f, "blk.0.attn_q.weight", 2), std::uint32_t{99});
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path, {"type 99 (unknown type 99) is not supported"});
}

TEST(BadFile, GgufMissingTensor) {
  TinyGguf spec;
  spec.omit_tensors = {"blk.1.ffn_up.weight"};
  const auto f = tiny_gguf(spec);
  expect_message(load_error(f.path), f.path, {"missing tensor", "ffn_up of layer 1"});
}

TEST(BadFile, GgufShapeContradictsConfig) {
  TinyGguf spec;
  spec.shapes["blk.0.attn_q.weight"] = {64, 48};
  const auto f = tiny_gguf(spec);
  expect_message(load_error(f.path), f.path, {"'blk.0.attn_q.weight' has shape [48, 64]", "implies [64, 64]"});
  spec.shapes = {{"blk.0.attn_q.weight", {64, 64, 2}}};
  const auto g = tiny_gguf(spec);
  expect_message(load_error(g.path), g.path, {"blk.0.attn_q.weight", "expected a matrix", "[64, 64, 2]"});
}

TEST(BadFile, GgufUnsupportedArchitectureAndMissingKey) {
  TinyGguf spec;
  spec.arch = "mamba";
  expect_message(load_error(tiny_gguf(spec).path), "model.gguf", {"general.architecture", "found 'mamba'"});
  spec = {};
  spec.omit_keys = {"llama.block_count"};
  expect_message(load_error(tiny_gguf(spec).path), "model.gguf", {"missing metadata key 'llama.block_count'"});
}

// A block_count past the file's tensors (every layer holds one) is refused before any per-layer
// list is made of it.
TEST(BadFile, GgufBlockCountBeyondItsTensors) {
  const auto path = testing::temp_dir("bad") / "layers.gguf";
  GgufWriter w(path);
  w.add_string("general.architecture", "gemma4");
  w.add_u32("gemma4.block_count", 1u << 30);
  w.add_tensor("token_embd.weight", DType::f32, {4, 2});
  const std::vector<std::byte> data(32);
  w.write_tensor_data(data);
  w.finish();
  expect_message(load_error(path), path,
                 {"gemma4.block_count: expected at most one layer per tensor (1 tensors), found 1073741824"});
}

// What an architecture's llama.cpp graph does not compute is refused, never computed anyway.
TEST(BadFile, GgufArchitecturesRefuseWhatLlamaCppDoesNotCompute) {
  TinyGguf spec;
  spec.arch = "gemma";
  expect_message(load_error(tiny_gguf(spec).path), "model.gguf",
                 {"tensor 'output.weight' is not supported: llama.cpp's gemma ties the output to token_embd.weight"});
  spec.arch = "granite";
  expect_message(load_error(tiny_gguf(spec).path), "model.gguf",
                 {"missing metadata key 'granite.logit_scale' (llama.cpp's granite needs it)"});
  spec.arch = "olmo2";  // a Llama's tensors: no q/k norms over the whole projection
  expect_message(load_error(tiny_gguf(spec).path), "model.gguf",
                 {"missing tensor: expected q_norm of layer 0 for this olmo2 model"});
}

TEST(BadFile, GgufAbsurdCountsAndLengths) {
  auto f = tiny_gguf();
  const auto original = f.bytes;
  patch(f.bytes, 8, std::uint64_t{1} << 40);  // tensor count
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path,
                 {"truncated or corrupt: the tensor count is 1099511627776", "but the file has"});
  f.bytes = original;
  patch(f.bytes, 24, std::uint64_t{1} << 40);  // length of the first key
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path, {"truncated: the key of metadata #0 needs bytes [32, "});
  f.bytes = original;
  patch(f.bytes, after_string(f.bytes, "tokenizer.ggml.tokens") + 8, std::uint64_t{1} << 50);
  write_bytes(f.path, f.bytes);
  expect_message(load_error(f.path), f.path,
                 {"the length of array 'tokenizer.ggml.tokens' is 1125899906842624", "but the file has"});
}

// Random single-byte corruptions of the header: each file loads or gives a one-line FormatError.
TEST(BadFile, GgufCorruptHeaderBytesNeverCrash) {
  const auto f = tiny_gguf();
  const std::uint64_t header_end = GgufFile(f.path).data_offset();
  std::mt19937 rng(1);
  int errors = 0;
  for (int i = 0; i < 600; ++i) {
    auto bytes = f.bytes;
    bytes[rng() % header_end] = static_cast<std::uint8_t>(rng());
    write_bytes(f.path, bytes);
    try {
      load_model(f.path);
    } catch (const FormatError& e) {
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++errors;
    }
  }
  EXPECT_GT(errors, 50);
}

TEST(BadFile, NotAModel) {
  const auto dir = testing::temp_dir("bad");
  write_bytes(dir / "empty.bin", {});
  expect_message(load_error(dir / "empty.bin"), "empty.bin", {"found an empty file"});
  write_bytes(dir / "zip.bin", {'P', 'K', 3, 4, 0, 0});
  expect_message(load_error(dir / "zip.bin"), "zip.bin", {"found a file starting with 'PK\\x03\\x04'"});
  expect_message(load_error(dir), dir, {"found a folder without config.json"});
  const std::string msg = error_of<UsageError>([&] { load_model(dir / "absent.gguf"); });
  expect_message(msg, "absent.gguf", {"no such file or folder"});
}

// A valid tiny Hugging Face folder, for editing.
struct HfFixture {
  fs::path folder;
  fs::path file;  // model.safetensors
  std::vector<std::uint8_t> bytes;
};

HfFixture tiny_folder(const testing::TinyHf& hf = testing::tiny_hf()) {
  HfFixture f{testing::temp_dir("bad-hf"), {}, {}};
  testing::write_hf_folder(f.folder, hf, 1);
  f.file = f.folder / "model.safetensors";
  f.bytes = read_bytes(f.file);
  return f;
}

testing::StEntry* entry(testing::TinyHf& hf, const std::string& name) {
  for (auto& t : hf.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

TEST(BadFile, SafetensorsBadHeaderLength) {
  auto f = tiny_folder();
  patch(f.bytes, 0, std::uint64_t{f.bytes.size()});
  write_bytes(f.file, f.bytes);
  expect_message(load_error(f.folder), f.file, {"truncated: the JSON header needs bytes [8, ", "but the file has"});
  patch(f.bytes, 0, std::uint64_t{1} << 40);
  write_bytes(f.file, f.bytes);
  expect_message(load_error(f.folder), f.file, {"expected a header length up to", "found 1099511627776"});
  write_bytes(f.file, {1, 2, 3});
  expect_message(load_error(f.folder), f.file, {"truncated: the header length needs bytes [0, 8)"});
}

TEST(BadFile, SafetensorsHeaderIsNotJson) {
  auto f = tiny_folder();
  f.bytes[9] = '!';
  write_bytes(f.file, f.bytes);
  expect_message(load_error(f.folder), f.file, {"expected a safetensors header in JSON", "parse error"});
}

TEST(BadFile, SafetensorsDataOffsetsPastTheEnd) {
  auto f = tiny_folder();
  f.bytes.erase(f.bytes.end() - 10, f.bytes.end());
  write_bytes(f.file, f.bytes);
  expect_message(load_error(f.folder), f.file, {"truncated: tensor 'model.layers.1.mlp.down_proj.weight'"});
  auto hf = testing::tiny_hf();
  entry(hf, "model.norm.weight")->data.resize(100);  // offsets disagree with the shape
  const auto g = tiny_folder(hf);
  expect_message(load_error(g.folder), g.file, {"tensor 'model.norm.weight'", "expected 256 bytes", "found [", "]"});
}

TEST(BadFile, SafetensorsUnknownDtype) {
  auto hf = testing::tiny_hf();
  auto* t = entry(hf, "model.layers.0.mlp.up_proj.weight");
  t->dtype = "I8";
  t->data.resize(96 * 64);
  expect_message(load_error(tiny_folder(hf).folder), "model.safetensors",
                 {"tensor 'model.layers.0.mlp.up_proj.weight'", "expected dtype F32, F16 or BF16", "found dtype I8"});
  t->dtype = "Q9";
  expect_message(load_error(tiny_folder(hf).folder), "model.safetensors", {"found dtype 'Q9'"});
}

TEST(BadFile, SafetensorsMissingTensorAndShapeMismatch) {
  auto hf = testing::tiny_hf();
  std::erase_if(hf.tensors, [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  auto f = tiny_folder(hf);
  expect_message(load_error(f.folder), f.folder, {"missing tensor", "ffn_up of layer 1"});
  hf = testing::tiny_hf();
  auto* q = entry(hf, "model.layers.0.self_attn.q_proj.weight");
  q->shape = {48, 64};
  q->data.resize(48 * 64 * 4);
  f = tiny_folder(hf);
  expect_message(load_error(f.folder), f.folder,
                 {"'model.layers.0.self_attn.q_proj.weight' has shape [48, 64]", "implies [64, 64]"});
}

TEST(BadFile, SafetensorsConfigProblems) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](auto& j) { j.erase("hidden_size"); }, "'hidden_size': expected an integer, found no such key"},
      {[](auto& j) { j["num_hidden_layers"] = "five"; }, "'num_hidden_layers': expected a non-negative integer"},
      {[](auto& j) { j["model_type"] = "gemma3n"; },
       "'model_type' = \"gemma3n\" is not supported: tapdiff implements llama, mistral, mixtral, qwen2, qwen3, "
       "qwen3_moe, granite, olmo2, gemma, gemma2, gemma3_text, smollm3, phi3, starcoder2, arcee, nemotron, seed_oss, "
       "ernie4_5, helium, ministral, ministral3, glm, glm4, stablelm, phi, cohere, cohere2, cohere2_moe, olmo3, "
       "exaone4, "
       "hunyuan_v1_dense, hunyuan_v1_moe, "
       "gpt_neox, gpt2, opt, falcon, olmo, olmoe, qwen2_moe, granitemoe, granitemoeshared, glm4_moe, dots1, "
       "minimax_m2, ernie4_5_moe, phimoe, apertus, gpt_oss, llama4_text, deepseek_v3, deepseek_v2, deepseek_v32, "
       "gemma4_text, "
       "mistral3, gemma3"},
      {[](auto& j) { j["model_type"] = "gemma3"; }, "'text_config': expected an object, found no such key"},
      {[](auto& j) {
         j = {{"model_type", "gemma3"}, {"text_config", j}, {"vision_config", {{"model_type", "siglip_vision_model"}}}};
         j["text_config"]["model_type"] = "gemma2";
       },
       "'text_config' = \"gemma2\" is not supported: tapdiff implements a gemma3_text text model inside gemma3"},
      {[](auto& j) {
         j["model_type"] = "gemma3_text";
         j = {{"model_type", "gemma3"}, {"text_config", j}, {"tie_word_embeddings", false}};
       },
       "'tie_word_embeddings': expected text_config's value, true, found false"},
      {[](auto& j) {
         j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
       },
       "'rope_parameters' = {\"full_attention\":{\"rope_theta\":10000.0,\"rope_type\":\"default\"}} is not supported: "
       "tapdiff implements RoPE parameters per layer type in 5.x rope_parameters of Gemma 3, Gemma 4 and OLMo 3 only"},
      {[](auto& j) {
         j["model_type"] = "gemma3_text";
         j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}},
                                 {"chunked_attention", {{"rope_type", "default"}}}};
         j["layer_types"] = {"full_attention", "full_attention"};
       },
       "rope_parameters: 'chunked_attention' = {\"rope_type\":\"default\"} is not supported"},
      {[](auto& j) {
         j["model_type"] = "gemma3_text";
         j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}},
                                 {"sliding_attention", {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}}};
       },
       "rope_parameters: 'sliding_attention': expected the full layers' rotary dimension, 16, found 8 "
       "(partial_rotary_factor)"},
      {[](auto& j) {
         j["rope_scaling"] = {{"type", "linear"}};
       },
       "config.json: rope_scaling: 'factor': expected a number, found no such key"},
      {[](auto& j) {
         j["rope_scaling"] = {{"rope_type", "mrope"}, {"factor", 2}};
       },
       "'rope_type' = \"mrope\" is not supported: tapdiff implements default, linear, dynamic, yarn"},
      {[](auto& j) { j["hidden_act"] = "gelu_fast"; },
       "'hidden_act' = \"gelu_fast\" is not supported: tapdiff implements silu, gelu, gelu_pytorch_tanh, gelu_new, "
       "relu, relu2 and xielu"},
      {[](auto& j) { j["model_type"] = "mistral", j["mlp_bias"] = true; },
       "'mlp_bias' = true is not supported: tapdiff implements false only (no biases in this family's MLP)"},
      {[](auto& j) { j["model_type"] = "mistral", j["attention_bias"] = true; },
       "'attention_bias' = true is not supported: tapdiff implements only the keys whose meaning it implements"},
      {[](auto& j) { j["model_type"] = "phi3", j["attention_bias"] = true; },
       "'attention_bias' = true is not supported: tapdiff implements false only (Phi-3's projections without biases)"},
      {[](auto& j) { j["model_type"] = "qwen2", j["layer_types"] = {"full_attention"}; },
       "'layer_types': expected an array of 2 layer types (num_hidden_layers), found [\"full_attention\"]"},
      {[](auto& j) {
         j["model_type"] = "smollm3", j["no_rope_layers"] = {1, 2};
       },
       "'no_rope_layers': expected flags 0 or 1, found [1,2]"},
      {[](auto& j) { j["model_type"] = "gemma", j["use_bidirectional_attention"] = true; },
       "'use_bidirectional_attention' = true is not supported: tapdiff implements false only (causal attention)"},
      {[](auto& j) {
         j["quantization_config"] = {{"quant_method", "gptq"}};
       },
       "'quantization_config' = {\"quant_method\":\"gptq\"} is not supported"},
      {[](auto& j) {
         j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e4}};
         j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2}};
       },
       "either rope_parameters (5.x) or rope_scaling (4.x), found both"},
      {[](auto& j) { j["num_key_value_heads"] = 3; }, "n_kv_heads dividing n_heads"},
      {[](auto& j) {  // q_dim() would overflow an int (found by tests/fuzz)
         j["num_attention_heads"] = j["num_key_value_heads"] = 1 << 30, j["head_dim"] = 8;
       },
       "expected n_heads * head_dim below 2^31, found 1073741824 x 8"}};
  for (const auto& [edit, expected] : cases) {
    auto hf = testing::tiny_hf();
    edit(hf.config);
    const auto f = tiny_folder(hf);
    expect_message(load_error(f.folder), "config.json", {expected});
  }
  const auto f = tiny_folder();
  std::ofstream(f.folder / "config.json") << "{\"model_type\": ";
  expect_message(load_error(f.folder), "config.json", {"expected a model config in JSON", "parse error"});
}

// Biases the config promises are required; norms a block does not have are refused; two names for
// one weight are refused.
TEST(BadFile, SafetensorsTensorsTheBlockDoesNotHave) {
  auto hf = testing::tiny_hf();
  hf.config["mlp_bias"] = true;
  auto f = tiny_folder(hf);
  expect_message(load_error(f.folder), f.folder, {"missing tensor", "b_gate of layer 0"});
  hf = testing::tiny_hf();
  auto extra = *entry(hf, "model.layers.0.input_layernorm.weight");
  extra.name = "model.layers.0.post_feedforward_layernorm.weight";
  hf.tensors.push_back(extra);
  f = tiny_folder(hf);
  expect_message(load_error(f.folder), f.folder,
                 {"tensor 'model.layers.0.post_feedforward_layernorm.weight' is not supported", "\"post_norms\":false",
                  "computes no op that uses it"});
  hf = testing::tiny_hf();
  extra.name = "model.layers.0.pre_feedforward_layernorm.weight";
  hf.tensors.push_back(extra);
  f = tiny_folder(hf);
  expect_message(
      load_error(f.folder), "model.safetensors",
      {"'model.layers.0.post_attention_layernorm.weight'", "'model.layers.0.pre_feedforward_layernorm.weight'",
       "are both ffn_norm of layer 0 for a llama model"});
}

TEST(BadFile, SafetensorsMissingFilesAndShards) {
  auto f = tiny_folder();
  fs::remove(f.file);
  expect_message(load_error(f.folder), f.folder, {"expected model.safetensors or model.safetensors.index.json"});
  const auto dir = testing::temp_dir("bad-shards");
  testing::write_hf_folder(dir, testing::tiny_hf(), 2);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  expect_message(load_error(dir), "model.safetensors.index.json",
                 {"expected the shard model-00002-of-00002.safetensors", "found no such file"});
  const auto dir2 = testing::temp_dir("bad-shards2");
  auto hf = testing::tiny_hf();
  testing::write_hf_folder(dir2, hf, 2);
  hf.tensors.erase(hf.tensors.begin());  // shard 1 loses model.embed_tokens.weight, the index keeps it
  std::vector<testing::StEntry> part;
  for (std::size_t i = 1; i < hf.tensors.size(); i += 2) part.push_back(hf.tensors[i]);
  testing::write_safetensors(dir2 / "model-00001-of-00002.safetensors", part);
  expect_message(load_error(dir2), "model-00001-of-00002.safetensors",
                 {"tensor 'model.embed_tokens.weight' listed in model.safetensors.index.json is missing"});
}

}  // namespace
}  // namespace tapdiff::formats
