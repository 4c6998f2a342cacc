#include "tests/model_file_fixtures.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dumps/safetensors_writer.h"
#include "formats/gguf_writer.h"

namespace tapdiff::testing {

using model::DType;

namespace {

// The tensors of `t` in llama.cpp's order, with their GGUF shapes (ne[0] contiguous).
std::vector<std::pair<std::string, std::vector<std::int64_t>>> tiny_tensors(const TinyGguf& t) {
  const std::int64_t head_dim = t.dim / t.n_heads, q = t.n_heads * head_dim, kv = t.n_kv_heads * head_dim;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out = {
      {"token_embd.weight", {t.dim, t.vocab}}, {"output_norm.weight", {t.dim}}, {"output.weight", {t.dim, t.vocab}}};
  for (int l = 0; l < t.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    out.push_back({b + "attn_norm.weight", {t.dim}});
    out.push_back({b + "attn_q.weight", {t.dim, q}});
    out.push_back({b + "attn_k.weight", {t.dim, kv}});
    out.push_back({b + "attn_v.weight", {t.dim, kv}});
    if (t.qkv_bias) {
      out.push_back({b + "attn_q.bias", {q}});
      out.push_back({b + "attn_k.bias", {kv}});
      out.push_back({b + "attn_v.bias", {kv}});
    }
    out.push_back({b + "attn_output.weight", {q, t.dim}});
    out.push_back({b + "ffn_norm.weight", {t.dim}});
    out.push_back({b + "ffn_gate.weight", {t.dim, t.ffn}});
    out.push_back({b + "ffn_up.weight", {t.dim, t.ffn}});
    out.push_back({b + "ffn_down.weight", {t.ffn, t.dim}});
  }
  return out;
}

void add_metadata(formats::GgufWriter& w, const TinyGguf& t) {
  auto u32 = [&](const std::string& key, int v) {
    if (!t.omit_keys.contains(key)) w.add_u32(key, static_cast<std::uint32_t>(v));
  };
  w.add_string("general.architecture", t.arch);
  u32(t.arch + ".block_count", t.n_layers);
  u32(t.arch + ".embedding_length", t.dim);
  u32(t.arch + ".attention.head_count", t.n_heads);
  u32(t.arch + ".attention.head_count_kv", t.n_kv_heads);
  u32(t.arch + ".feed_forward_length", t.ffn);
  u32(t.arch + ".context_length", 128);
  w.add_f32(t.arch + ".rope.freq_base", 500000.0f);
  w.add_f32(t.arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  std::vector<std::string> tokens;
  for (int i = 0; i < t.vocab; ++i) tokens.push_back("tok" + std::to_string(i));
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_f32_array("tokenizer.ggml.scores", std::vector<float>(tokens.size(), -1.0f));
  w.add_i32_array("tokenizer.ggml.token_type", std::vector<std::int32_t>(tokens.size(), 1));
  u32("tokenizer.ggml.bos_token_id", 1);
  u32("tokenizer.ggml.eos_token_id", 2);
  w.add_bool("tokenizer.ggml.add_space_prefix", false);
}

// A .npy member: the header dict (padded so that the data starts at a multiple of 64), then the data.
std::vector<std::byte> npy_bytes(const Npy& a) {
  std::string shape = fmt::format("{}", fmt::join(a.shape, ", "));
  if (a.shape.size() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': ({}), }}", a.descr,
                                   a.fortran ? "True" : "False", shape);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string head = "\x93NUMPY\x01";
  head += '\0';
  head += static_cast<char>(header.size() & 0xff);
  head += static_cast<char>(header.size() >> 8);
  head += header;
  std::vector<std::byte> out(head.size());
  std::memcpy(out.data(), head.data(), head.size());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

// Raw deflate (no zlib header), as zip members hold it.
std::vector<std::byte> deflate_raw(const std::vector<std::byte>& in) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::vector<std::byte> out(deflateBound(&z, static_cast<uLong>(in.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

// Writes `t` to `path` with random values; returns each tensor's values before quantization.
std::map<std::string, std::vector<float>> write_tiny_gguf(const std::filesystem::path& path, const TinyGguf& t) {
  formats::GgufWriter w(path);
  add_metadata(w, t);
  auto tensors = tiny_tensors(t);
  std::erase_if(tensors, [&](const auto& e) { return t.omit_tensors.contains(e.first); });
  for (auto& [name, ne] : tensors) {
    if (auto it = t.shapes.find(name); it != t.shapes.end()) ne = it->second;
    const auto d = t.dtypes.find(name);
    w.add_tensor(name, d == t.dtypes.end() ? DType::f32 : d->second, ne);
  }
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::map<std::string, std::vector<float>> values;
  for (const auto& [name, ne] : tensors) {
    const auto d = t.dtypes.find(name);
    const DType dtype = d == t.dtypes.end() ? DType::f32 : d->second;
    std::int64_t rows = 1;
    for (std::size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
    std::vector<float> v(static_cast<std::size_t>(rows * ne[0]));
    for (float& x : v) x = dist(rng);
    std::vector<std::byte> bytes(model::row_bytes(dtype, ne[0]) * static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r)
      model::quantize_row(dtype, v.data() + r * ne[0],
                          bytes.data() + static_cast<std::size_t>(r) * model::row_bytes(dtype, ne[0]), ne[0]);
    w.write_tensor_data(bytes);
    values[name] = std::move(v);
  }
  w.finish();
  return values;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<StEntry>& tensors) {
  std::vector<dumps::NamedArray> arrays;
  for (const StEntry& t : tensors) {
    dumps::NamedArray& a = arrays.emplace_back();
    a.name = t.name, a.type_name = t.dtype, a.shape = t.shape, a.bytes = t.data;
  }
  dumps::write_safetensors(path, "test fixture", arrays, {{"format", "pt"}});
}

// A tiny Llama model in the Hugging Face layout, F32, tied embeddings (no lm_head); by default
// dim 64, 2 layers, 4 heads, 2 kv heads, ffn 96, vocab 48. Element i of a tensor is
// i * 0.001 + its index.
TinyHf tiny_hf(const TinyHfShape& s) {
  TinyHf hf;
  hf.config = {{"model_type", "llama"},
               {"hidden_size", s.dim},
               {"num_hidden_layers", s.n_layers},
               {"num_attention_heads", s.n_heads},
               {"num_key_value_heads", s.n_kv_heads},
               {"intermediate_size", s.ffn},
               {"vocab_size", s.vocab},
               {"rms_norm_eps", 1e-6},
               {"rope_theta", 10000.0},
               {"tie_word_embeddings", true},
               {"rope_scaling", nullptr},
               {"bos_token_id", 1},
               {"eos_token_id", {2, 7}}};
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(i) * 0.001f + static_cast<float>(hf.tensors.size());
    std::vector<std::byte> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    hf.tensors.push_back({name, "F32", std::move(shape), std::move(bytes)});
  };
  const std::int64_t dim = s.dim, q = dim, kv = s.n_kv_heads * (dim / s.n_heads), ffn = s.ffn;
  add("model.embed_tokens.weight", {s.vocab, dim});
  add("model.norm.weight", {dim});
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {dim});
    add(p + "self_attn.q_proj.weight", {q, dim});
    add(p + "self_attn.k_proj.weight", {kv, dim});
    add(p + "self_attn.v_proj.weight", {kv, dim});
    add(p + "self_attn.o_proj.weight", {dim, q});
    add(p + "post_attention_layernorm.weight", {dim});
    add(p + "mlp.gate_proj.weight", {ffn, dim});
    add(p + "mlp.up_proj.weight", {ffn, dim});
    add(p + "mlp.down_proj.weight", {dim, ffn});
  }
  return hf;
}

// Writes config.json and model.safetensors (shards == 1) or `shards` files plus the index.
void write_hf_folder(const std::filesystem::path& folder, const TinyHf& hf, int shards) {
  std::ofstream(folder / "config.json") << hf.config.dump(2);
  if (shards == 1) return write_safetensors(folder / "model.safetensors", hf.tensors);
  nlohmann::json map = nlohmann::json::object();
  for (int s = 0; s < shards; ++s) {
    const std::string file =
        "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
    std::vector<StEntry> part;
    for (std::size_t i = static_cast<std::size_t>(s); i < hf.tensors.size(); i += static_cast<std::size_t>(shards)) {
      part.push_back(hf.tensors[i]);
      map[hf.tensors[i].name] = file;
    }
    write_safetensors(folder / file, part);
  }
  std::ofstream(folder / "model.safetensors.index.json")
      << nlohmann::json{{"metadata", {}}, {"weight_map", map}}.dump();
}

void write_npz(const std::filesystem::path& path, const std::vector<Npy>& arrays, bool deflated) {
  std::string out, central;
  auto u16 = [](std::string& s, std::uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); };
  auto u32 = [](std::string& s, std::uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  const std::uint16_t method = deflated ? 8 : 0;
  for (const Npy& a : arrays) {
    const std::vector<std::byte> body = npy_bytes(a);
    const std::vector<std::byte> packed = deflated ? deflate_raw(body) : body;
    const std::string name = a.name + ".npy";
    const auto offset = static_cast<std::uint32_t>(out.size());
    const auto crc = static_cast<std::uint32_t>(
        crc32_z(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<z_size_t>(body.size())));
    u32(out, 0x04034b50), u16(out, 20), u16(out, 0), u16(out, method), u16(out, 0), u16(out, 0), u32(out, crc);
    u32(out, static_cast<std::uint32_t>(packed.size())), u32(out, static_cast<std::uint32_t>(body.size()));
    u16(out, static_cast<std::uint16_t>(name.size())), u16(out, 0);
    out += name;
    out.append(reinterpret_cast<const char*>(packed.data()), packed.size());
    u32(central, 0x02014b50), u16(central, 20), u16(central, 20), u16(central, 0), u16(central, method);
    u16(central, 0), u16(central, 0), u32(central, crc);
    u32(central, static_cast<std::uint32_t>(packed.size())), u32(central, static_cast<std::uint32_t>(body.size()));
    u16(central, static_cast<std::uint16_t>(name.size())), u16(central, 0), u16(central, 0), u16(central, 0);
    u16(central, 0), u32(central, 0), u32(central, offset);
    central += name;
  }
  const auto at = static_cast<std::uint32_t>(out.size());
  out += central;
  u32(out, 0x06054b50), u16(out, 0), u16(out, 0), u16(out, static_cast<std::uint16_t>(arrays.size()));
  u16(out, static_cast<std::uint16_t>(arrays.size())), u32(out, static_cast<std::uint32_t>(central.size()));
  u32(out, at), u16(out, 0);
  std::ofstream(path, std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
}

}  // namespace tapdiff::testing
