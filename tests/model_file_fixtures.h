#pragma once
// Hand-made model files for the loader tests: a tiny GGUF written with GgufWriter and tiny
// Hugging Face folders written byte by byte, so each test can break exactly one thing.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dtype.h"

namespace tapdiff::testing {

// A small Llama-family model for GgufWriter. Defaults: head_dim 16; every tensor f32 unless
// `dtypes` names it; `shapes` overrides GGUF ne; omitted tensors and keys are left out.
struct TinyGguf {
  std::string arch = "llama";
  int n_layers = 2, dim = 64, n_heads = 4, n_kv_heads = 2, ffn = 96, vocab = 48;
  std::map<std::string, model::DType> dtypes;
  std::set<std::string> omit_tensors, omit_keys;
  std::map<std::string, std::vector<std::int64_t>> shapes;
  bool qkv_bias = false;
};
// Writes the model; returns the f32 values written per tensor name (before quantization).
std::map<std::string, std::vector<float>> write_tiny_gguf(const std::filesystem::path& path, const TinyGguf& t);

// One tensor of a hand-written safetensors file.
struct StEntry {
  std::string name;
  std::string dtype = "F32";
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;
};
struct TinyHf {
  nlohmann::json config;
  std::vector<StEntry> tensors;
};
// The dimensions of a tiny_hf() model (head_dim = dim / n_heads).
struct TinyHfShape {
  int n_layers = 2, dim = 64, n_heads = 4, n_kv_heads = 2, ffn = 96, vocab = 48;
};
// Writes a safetensors file: u64 header length, JSON header (space-padded to 8 bytes), data.
void write_safetensors(const std::filesystem::path& path, const std::vector<StEntry>& tensors);
TinyHf tiny_hf(const TinyHfShape& shape = {});
void write_hf_folder(const std::filesystem::path& folder, const TinyHf& hf, int shards = 1);

// One array of a hand-written .npz (numpy's .npy format: a header dict, then the data).
struct Npy {
  std::string name, descr;  // descr: numpy's type string, "<f4", "<i8", ...
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;
  bool fortran = false;
};
template <class T>
Npy npy(std::string name, std::string descr, std::vector<std::int64_t> shape, const std::vector<T>& values) {
  std::vector<std::byte> data(values.size() * sizeof(T));
  std::memcpy(data.data(), values.data(), data.size());
  return {std::move(name), std::move(descr), std::move(shape), std::move(data)};
}
// Writes np.savez's layout: a zip of NAME.npy members, stored, or deflated as np.savez_compressed
// does (CRCs left 0: tapdiff does not check them).
void write_npz(const std::filesystem::path& path, const std::vector<Npy>& arrays, bool deflated = false);

}  // namespace tapdiff::testing
