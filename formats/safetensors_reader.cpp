#include "formats/safetensors_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "formats/family_spec.h"
#include "formats/hf_experts.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "model/json_input.h"
#include "model/mapped_file.h"
#include "model/printable.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // the safetensors format's own limit

// Bytes per element of every safetensors dtype (0 for an unknown name): C64 among them, what a
// forward hook sees of DeepSeek-V2's complex RoPE table.
std::size_t element_bytes(std::string_view dtype) {
  static constexpr std::pair<std::string_view, std::size_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8}};
  for (const auto& [name, size] : kSizes)
    if (name == dtype) return size;
  return 0;
}

std::optional<DType> model_dtype(std::string_view dtype) {
  if (dtype == "F32") return DType::f32;
  if (dtype == "F16") return DType::f16;
  if (dtype == "BF16") return DType::bf16;
  return std::nullopt;
}

json read_json_file(const std::filesystem::path& path, std::string_view what) {
  return parse_json_text(read_regular_file(path, ""), path.string(), what);
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : path_(path), file_(std::make_unique<MappedFile>(path)) {
  const std::span<const std::byte> bytes = file_->bytes();
  const std::string file = path.string();
  if (bytes.size() < 8)
    throw_format_error(fmt::format("{}: truncated: the header length needs bytes [0, 8) but the file has {} bytes",
                                   file, bytes.size()));
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeaderBytes)
    throw_format_error(fmt::format("{}: expected a header length up to {} bytes, found {}", file, kMaxHeaderBytes, n));
  if (n > bytes.size() - 8)
    throw_format_error(fmt::format("{}: truncated: the JSON header needs bytes [8, {}) but the file has {} bytes", file,
                                   8 + n, bytes.size()));
  const json header = parse_json_text(std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), n), file,
                                      "a safetensors header");
  if (!header.is_object())
    throw_format_error(fmt::format("{}: expected a JSON object as the header, found {}", file, json_excerpt(header)));
  const std::span<const std::byte> data = bytes.subspan(8 + n);
  for (const auto& [name, entry] : header.items()) {
    if (name != "__metadata__") {
      parse_entry(name, entry, data);
    } else if (entry.is_object()) {
      for (const auto& [k, v] : entry.items())
        metadata_[k] = v.is_string() ? v.get<std::string>() : json_excerpt(v, 4096);
    }
  }
  check_data_layout(data);
}

// The tensors' bytes must tile the data section, as the format requires: no overlap, no byte that
// belongs to no tensor. A header length off by a few bytes, or offsets from another file, fail here.
void SafetensorsFile::check_data_layout(std::span<const std::byte> data) const {
  std::vector<const SafetensorsTensor*> order;
  for (const auto& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return std::pair(a->bytes.data(), a->bytes.size()) < std::pair(b->bytes.data(), b->bytes.size());
  });
  const std::uint64_t header_end = file_->size() - data.size();
  std::uint64_t covered = 0;  // bytes [0, covered) of the data section belong to a tensor
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor* t : order) {
    const auto begin = static_cast<std::uint64_t>(t->bytes.data() - data.data());
    if (begin < covered)
      throw_format_error(
          fmt::format("{}: tensor '{}': expected data that no other tensor uses, found bytes [{}, {}) "
                      "overlapping tensor '{}'",
                      path_.string(), printable(t->name), header_end + begin, header_end + begin + t->bytes.size(),
                      printable(previous->name)));
    if (begin > covered)
      throw_format_error(
          fmt::format("{}: expected the tensors' data to fill the data section, found bytes [{}, {}) "
                      "that belong to no tensor (before tensor '{}')",
                      path_.string(), header_end + covered, header_end + begin, printable(t->name)));
    covered = begin + t->bytes.size();
    previous = t;
  }
  if (covered != data.size())
    throw_format_error(
        fmt::format("{}: expected the tensors' data to end the file at byte {}, found {} more bytes "
                    "(a wrong header length, or bytes appended)",
                    path_.string(), header_end + covered, data.size() - covered));
}

// One tensor entry {dtype, shape, data_offsets}; its bytes must lie inside `data`.
void SafetensorsFile::parse_entry(const std::string& name, const json& entry, std::span<const std::byte> data) {
  auto fail = [&](std::string_view expected, const std::string& found) {
    throw_format_error(
        fmt::format("{}: tensor '{}': expected {}, found {}", path_.string(), printable(name), expected, found));
  };
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape") ||
      !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array())
    fail("an object with dtype, shape and data_offsets", json_excerpt(entry));
  SafetensorsTensor t;
  t.name = name;
  t.dtype_name = entry["dtype"].get<std::string>();
  t.dtype = model_dtype(t.dtype_name);
  const std::size_t elem = element_bytes(t.dtype_name);
  if (elem == 0) fail("a safetensors dtype (F32, F16, BF16, I8, ...)", fmt::format("dtype '{}'", t.dtype_name));
  std::uint64_t count = 1;
  const std::uint64_t limit = data.size();
  for (const json& d : entry["shape"]) {
    if (!d.is_number_unsigned()) fail("a shape of non-negative integers", json_excerpt(entry["shape"]));
    const auto n = d.get<std::uint64_t>();
    count = n != 0 && count > limit / n ? limit + 1 : count * n;  // saturates above the data size
    t.shape.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(n, std::uint64_t{1} << 62)));
  }
  const json& off = entry["data_offsets"];
  if (off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned() ||
      off[0].get<std::uint64_t>() > off[1].get<std::uint64_t>())
    fail("data_offsets [begin, end] with begin <= end", json_excerpt(off));
  const auto begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
  if (count > limit)
    fail(fmt::format("a shape whose {} data fits the file's {} data bytes", t.dtype_name, limit),
         fmt::format("shape [{}]", fmt::join(t.shape, ", ")));
  if (count * elem != end - begin)
    fail(fmt::format("{} bytes of data ({} of shape [{}]) in data_offsets", count * elem, t.dtype_name,
                     fmt::join(t.shape, ", ")),
         fmt::format("[{}, {}]", begin, end));
  const std::uint64_t header_end = file_->size() - data.size();  // 8 + header length
  if (end > data.size())
    throw_format_error(fmt::format("{}: truncated: tensor '{}' needs bytes [{}, {}) but the file has {} bytes",
                                   path_.string(), printable(name), header_end + begin, header_end + end,
                                   file_->size()));
  t.bytes = data.subspan(begin, end - begin);
  tensors_.push_back(std::move(t));
}

SafetensorsFile::~SafetensorsFile() = default;

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::unique_ptr<MappedFile> SafetensorsFile::release_mapping() { return std::move(file_); }

namespace {

// The weights a Hugging Face tensor name holds in a model of this config: one, the parts of a fused
// projection (Phi-3's qkv_proj and gate_up_proj, their rows in order; query_key_value, per KV head
// the rows of its query heads, its k's and its v's: GPT-NeoX's q, k and v per head, Falcon's
// groups; kv_b_proj, per head its k rows and its v rows), or none for a tensor the model does not use.
// post_attention_layernorm is the norm before the FFN in a block without post-norms (Llama), the norm on the
// attention's output in one with them (Gemma 2/3, OLMo 2).
std::vector<WeightPart> hf_weights(std::string_view name, const ModelConfig& c) {
  static constexpr std::pair<std::string_view, WeightKind> kGlobal[] = {
      {"model.embed_tokens.weight", WeightKind::token_embd},
      {"model.embed_positions.weight", WeightKind::pos_embd},
      {"model.norm.weight", WeightKind::output_norm},
      {"model.norm.bias", WeightKind::output_norm_b},
      {"lm_head.weight", WeightKind::output},
      {"lm_head.bias", WeightKind::output_b},
      {"model.embed_tokens_per_layer.weight", WeightKind::ple_token_embd},  // Gemma 4's per-layer inputs
      {"model.per_layer_model_projection.weight", WeightKind::ple_model_proj},
      {"model.per_layer_projection_norm.weight", WeightKind::ple_proj_norm}};
  const std::pair<std::string_view, WeightKind> kLayer[] = {
      {"input_layernorm.weight", WeightKind::attn_norm},
      {"input_layernorm.bias", WeightKind::attn_norm_b},
      {"self_attn.q_proj.weight", WeightKind::wq},
      {"self_attn.k_proj.weight", WeightKind::wk},
      {"self_attn.v_proj.weight", WeightKind::wv},
      {"self_attn.q_proj.bias", WeightKind::bq},
      {"self_attn.k_proj.bias", WeightKind::bk},
      {"self_attn.v_proj.bias", WeightKind::bv},
      {"self_attn.q_norm.weight", WeightKind::q_norm},
      {"self_attn.k_norm.weight", WeightKind::k_norm},
      {"self_attn.o_proj.weight", WeightKind::wo},
      {"self_attn.o_proj.bias", WeightKind::bo},
      {"post_attention_layernorm.weight", c.block.post_norms ? WeightKind::attn_post_norm : WeightKind::ffn_norm},
      {"post_attention_layernorm.bias", WeightKind::ffn_norm_b},  // norm biases: in blocks without post-norms
      {"pre_feedforward_layernorm.weight", WeightKind::ffn_norm},
      {"mlp.gate_proj.weight", WeightKind::ffn_gate},
      {"mlp.up_proj.weight", WeightKind::ffn_up},
      {"mlp.down_proj.weight", WeightKind::ffn_down},
      {"mlp.gate_proj.bias", WeightKind::b_gate},
      {"mlp.up_proj.bias", WeightKind::b_up},
      {"mlp.down_proj.bias", WeightKind::b_down},
      {"post_feedforward_layernorm.weight", WeightKind::ffn_post_norm},
      {"mlp.act_fn.alpha_p", WeightKind::xielu_alpha_p},
      {"mlp.act_fn.alpha_n", WeightKind::xielu_alpha_n},
      {"mlp.act_fn.beta", WeightKind::xielu_beta},
      {"mlp.act_fn.eps", WeightKind::xielu_eps},
      {"block_sparse_moe.gate.weight", WeightKind::moe_router},
      {"mlp.gate.weight", WeightKind::moe_router},
      {"mlp.gate.e_score_correction_bias", WeightKind::moe_score_bias},
      {"mlp.gate.bias", WeightKind::moe_router_b},  // gpt-oss's router
      {"self_attn.sinks", WeightKind::attn_sinks},
      {"layer_scalar", WeightKind::layer_scale},  // Gemma 4
      {"per_layer_input_gate.weight", WeightKind::ple_gate},
      {"per_layer_projection.weight", WeightKind::ple_proj},
      {"post_per_layer_input_norm.weight", WeightKind::ple_post_norm},
      {"router.proj.weight", WeightKind::moe_router},  // Gemma 4's MoE block, beside the MLP
      {"router.scale", WeightKind::moe_router_scale},
      {"router.per_expert_scale", WeightKind::moe_expert_scale},
      {"pre_feedforward_layernorm_2.weight", WeightKind::moe_norm},
      {"post_feedforward_layernorm_2.weight", WeightKind::moe_post_norm},
      {"post_feedforward_layernorm_1.weight", WeightKind::dense_post_norm},
      {"mlp.shared_expert.gate_proj.weight", WeightKind::shexp_gate},  // Qwen2-MoE
      {"mlp.shared_expert.up_proj.weight", WeightKind::shexp_up},
      {"mlp.shared_expert.down_proj.weight", WeightKind::shexp_down},
      {"mlp.shared_expert_gate.weight", WeightKind::shexp_gate_inp},
      {"mlp.shared_experts.gate_proj.weight", WeightKind::shexp_gate},  // DeepSeek, GLM-4.5
      {"mlp.shared_experts.up_proj.weight", WeightKind::shexp_up},
      {"mlp.shared_experts.down_proj.weight", WeightKind::shexp_down},
      {"self_attn.q_a_proj.weight", WeightKind::wq_a},  // latent attention (DeepSeek-V2/V3)
      {"self_attn.q_a_proj.bias", WeightKind::bq_a},
      {"self_attn.q_a_layernorm.weight", WeightKind::q_a_norm},
      {"self_attn.q_b_proj.weight", WeightKind::wq},
      {"self_attn.kv_a_proj_with_mqa.weight", WeightKind::wkv_a},
      {"self_attn.kv_a_proj_with_mqa.bias", WeightKind::bkv_a},
      {"self_attn.kv_a_layernorm.weight", WeightKind::kv_a_norm},
      {"self_attn.indexer.wq_b.weight", WeightKind::idx_wq},  // DeepSeek-V3.2's sparse attention
      {"self_attn.indexer.wk.weight", WeightKind::idx_wk},
      {"self_attn.indexer.k_norm.weight", WeightKind::idx_k_norm},
      {"self_attn.indexer.k_norm.bias", WeightKind::idx_k_norm_b},
      {"self_attn.indexer.weights_proj.weight", WeightKind::idx_w_proj}};
  for (const auto& [n, kind] : kGlobal)
    if (name == n) return {{kind, -1}};
  const auto in_layer = llama_layer_name(name);
  if (!in_layer) return {};
  const int layer = in_layer->first;
  name = in_layer->second;
  for (const auto& [n, kind] : kLayer)
    if (name == n) return {{kind, layer}};
  if (name == "self_attn.qkv_proj.weight")
    return {
        {WeightKind::wq, layer, c.q_dim()}, {WeightKind::wk, layer, c.kv_dim()}, {WeightKind::wv, layer, c.kv_dim()}};
  if (name == "self_attn.qkv_proj.bias")
    return {
        {WeightKind::bq, layer, c.q_dim()}, {WeightKind::bk, layer, c.kv_dim()}, {WeightKind::bv, layer, c.kv_dim()}};
  if (name == "self_attn.query_key_value.weight" || name == "self_attn.query_key_value.bias") {
    const bool bias = name.ends_with(".bias");
    const std::int64_t d = c.head_dim, groups = c.n_kv_heads, per_group = c.n_heads / c.n_kv_heads;
    return {{bias ? WeightKind::bq : WeightKind::wq, layer, per_group * d, groups},
            {bias ? WeightKind::bk : WeightKind::wk, layer, d, groups},
            {bias ? WeightKind::bv : WeightKind::wv, layer, d, groups}};
  }
  if (name == "self_attn.kv_b_proj.weight")  // per head its no-RoPE key rows, then its value rows
    return {{WeightKind::wk, layer, c.mla.nope_dim, c.n_heads}, {WeightKind::wv, layer, c.mla.v_dim, c.n_heads}};
  if (name == "mlp.gate_up_proj.weight")
    return {{WeightKind::ffn_gate, layer, c.ffn_dim}, {WeightKind::ffn_up, layer, c.ffn_dim}};
  if (name == "mlp.shared_experts.gate_up_proj.weight")  // Granite-MoE-Shared's shared_mlp.input_linear
    return {{WeightKind::shexp_gate, layer, c.experts.shared_ffn_dim},
            {WeightKind::shexp_up, layer, c.experts.shared_ffn_dim}};
  return {};
}

// A buffer older checkpoints saved that transformers recomputes: RoPE's inverse frequencies, and
// GPT-2's and GPT-NeoX's causal masks ([1, 1, n, n]) and the scalar they fill masked scores with.
bool is_recomputed_buffer(const SafetensorsTensor& t) {
  const std::vector<std::int64_t>& s = t.shape;
  const bool mask = s.size() == 4 && s[0] == 1 && s[1] == 1 && s[2] == s[3];
  return t.name.ends_with(".rotary_emb.inv_freq") ||
         (mask && (t.name.ends_with(".attn.bias") || t.name.ends_with(".attention.bias"))) ||
         (s.empty() && (t.name.ends_with(".attn.masked_bias") || t.name.ends_with(".attention.masked_bias")));
}

// The tensor names of a multimodal checkpoint (model/family.h, HfComposite): its text decoder's
// tensors under a prefix, as each transformers version saves them, beside the image encoder's,
// which a run on token ids never computes.
constexpr std::pair<std::string_view, std::string_view> kCompositeRenames[] = {
    {"language_model.model.", "model."},  // (prefix in the file, the decoder's own)
    {"model.language_model.", "model."},
    {"language_model.lm_head.", "lm_head."}};
constexpr std::string_view kCompositeEncoder[] = {"vision_tower.",       "multi_modal_projector.",
                                                  "model.vision_tower.", "model.multi_modal_projector.",
                                                  "vision_model.",       "model.vision_model."};  // Llama 4's

bool is_composite(std::string_view model_type) {
  const FamilySpec* family = hf_family(model_type);
  return family != nullptr && std::ranges::any_of(family->hf.composites, [&](const HfComposite& composite) {
           return composite.model_type == model_type;
         });
}

// A tensor's name as the text decoder's own (model.layers.0..., lm_head.weight), or nullopt for a
// tensor of a multimodal checkpoint's image encoder; `model_type` is config.json's.
std::optional<std::string> decoder_name(std::string_view name, std::string_view model_type) {
  if (!is_composite(model_type)) return std::string(name);
  for (std::string_view prefix : kCompositeEncoder)
    if (name.starts_with(prefix)) return std::nullopt;
  for (const auto& [in_file, own] : kCompositeRenames)
    if (name.starts_with(in_file)) return fmt::format("{}{}", own, name.substr(in_file.size()));
  return std::string(name);
}

// The tensor as [rows, cols]: the last dimension is cols, the one before rows, earlier ones must be
// 1; a scalar (Apertus's xIELU beta and eps) as [1, 1].
WeightTensor to_weight(const SafetensorsFile& f, const SafetensorsTensor& t) {
  auto fail = [&](std::string_view expected, const std::string& found) {
    throw_format_error(
        fmt::format("{}: tensor '{}': expected {}, found {}", f.path().string(), t.name, expected, found));
  };
  if (!t.dtype) fail("dtype F32, F16 or BF16", fmt::format("dtype {}", t.dtype_name));
  const std::size_t n = t.shape.size();
  for (std::size_t d = 0; d + 2 < n; ++d)
    if (t.shape[d] != 1) fail("a vector or a matrix", fmt::format("shape [{}]", fmt::join(t.shape, ", ")));
  if (n == 0) return WeightTensor{t.name, *t.dtype, 1, 1, t.bytes, {}};  // a scalar as a vector of one
  return WeightTensor{t.name, *t.dtype, n >= 2 ? t.shape[n - 2] : 1, t.shape[n - 1], t.bytes, {}};
}

// A matrix stored [in, out] (GPT-2's Conv1D) as the [out, in] tapdiff multiplies by, copied into
// the model.
WeightTensor transposed(const WeightTensor& t, Model& model, const std::string& file) {
  if (t.dtype != DType::f32 && t.dtype != DType::f16 && t.dtype != DType::bf16)
    throw_format_error(fmt::format("{}: tensor '{}': expected F32, F16 or BF16 values to transpose, found {}", file,
                                   t.name, dtype_name(t.dtype)));
  const std::size_t size = row_bytes(t.dtype, 1);
  std::vector<std::byte> bytes(t.bytes.size());
  for (std::int64_t r = 0; r < t.rows; ++r)
    for (std::int64_t c = 0; c < t.cols; ++c)
      std::memcpy(bytes.data() + static_cast<std::size_t>(c * t.rows + r) * size,
                  t.bytes.data() + static_cast<std::size_t>(r * t.cols + c) * size, size);
  return WeightTensor{t.name, t.dtype, t.cols, t.rows, model.hold(std::move(bytes)), {}};
}

// The safetensors files of the folder: model.safetensors, or the shards its index names (sorted).
std::vector<std::filesystem::path> shard_paths(const std::filesystem::path& folder, json* weight_map) {
  const auto single = folder / "model.safetensors";
  const auto index = folder / "model.safetensors.index.json";
  if (!std::filesystem::exists(index)) {
    if (std::filesystem::exists(single)) return {single};
    throw_format_error(
        fmt::format("{}: expected model.safetensors or model.safetensors.index.json, found neither", folder.string()));
  }
  const json j = read_json_file(index, "an index");
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw_format_error(fmt::format("{}: expected a 'weight_map' object, found {}", index.string(), json_excerpt(j)));
  std::set<std::string> names;
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos)
      throw_format_error(fmt::format("{}: weight_map['{}']: expected a file name in this folder, found {}",
                                     index.string(), tensor, json_excerpt(shard)));
    names.insert(shard.get<std::string>());
  }
  *weight_map = j["weight_map"];
  std::vector<std::filesystem::path> paths;
  for (const std::string& n : names) {
    paths.push_back(folder / n);
    if (!std::filesystem::exists(paths.back()))
      throw_format_error(
          fmt::format("{}: expected the shard {} named in its weight_map, found no such file", index.string(), n));
  }
  return paths;
}

}  // namespace

std::unique_ptr<Model> read_safetensors(const std::filesystem::path& folder) {
  const auto config_path = folder / "config.json";
  if (!std::filesystem::exists(config_path))
    throw_format_error(fmt::format("{}: expected a Hugging Face folder with config.json, found none", folder.string()));
  const json config_json = read_json_file(config_path, "a model config");
  ModelConfig config = hf_config(config_json, config_path.string());
  const std::string model_type = config_json.value("model_type", "");
  json weight_map;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  for (const auto& p : shard_paths(folder, &weight_map)) files.push_back(std::make_unique<SafetensorsFile>(p));
  std::unordered_map<std::string, std::pair<const SafetensorsFile*, const SafetensorsTensor*>> by_name;
  for (const auto& f : files)
    for (const auto& t : f->tensors())
      if (!by_name.emplace(t.name, std::pair{f.get(), &t}).second)
        throw_format_error(fmt::format("{}: tensor '{}' appears in two shards", f->path().string(), printable(t.name)));
  for (const auto& [tensor, shard] : weight_map.items())
    if (!by_name.contains(tensor) || by_name[tensor].first->path().filename() != shard.get<std::string>())
      throw_format_error(fmt::format("{}: tensor '{}' listed in model.safetensors.index.json is missing",
                                     (folder / shard.get<std::string>()).string(), printable(tensor)));
  std::map<std::string, std::string> names;  // the decoder's name -> the file's, sorted: one order for every message
  for (const auto& [name, where] : by_name) {
    std::optional<std::string> own = decoder_name(name, model_type);
    if (!own) continue;
    own = hf_llama_name(*own, family_spec(config.family).hf);
    if (const auto [at, added] = names.emplace(*own, name); !added)
      throw_format_error(fmt::format("{}: tensors '{}' and '{}' are both the text decoder's '{}'",
                                     where.first->path().string(), printable(std::min(at->second, name)),
                                     printable(std::max(at->second, name)), printable(*own)));
  }
  if (!config.tied_output && !names.contains("lm_head.weight"))
    throw_format_error(
        fmt::format("{}: tie_word_embeddings is false, but the folder has no lm_head.weight", config_path.string()));
  config.validate(config_path.string());
  auto model = std::make_unique<Model>(folder, config);
  const HfRecipe& spec = family_spec(config.family).hf;
  HfExperts experts(*model, spec.experts);
  for (const auto& [own, name] : names) {
    const auto& where = by_name.at(name);
    const auto in_layer = llama_layer_name(own);
    if (in_layer && experts.take(in_layer->first, in_layer->second, *where.first, *where.second)) continue;
    const std::vector<WeightPart> parts = hf_weights(own, config);
    if (parts.empty() && is_recomputed_buffer(*where.second)) continue;
    const std::string file = where.first->path().string();
    if (parts.empty())
      throw_format_error(
          fmt::format("{}: tensor '{}' is not supported: tapdiff computes no op that uses it", file, printable(name)));
    if (parts.front().kind == WeightKind::output && config.tied_output) continue;  // tied to the embedding
    if (parts.front().layer >= config.n_layers)
      throw_format_error(fmt::format("{}: tensor '{}' belongs to layer {}, but num_hidden_layers is {}", file,
                                     printable(name), parts.front().layer, config.n_layers));
    WeightTensor weight = to_weight(*where.first, *where.second);
    if (spec.conv1d && in_layer && weight.rows > 1) weight = transposed(weight, *model, file);
    model->add_parts(weight, parts, file);
  }
  experts.add_to(*model);
  if (spec.weightless_norms) add_unit_norms(*model);
  add_unit_head_norms(*model);
  add_values_from_keys(*model);
  for (auto& f : files) model->adopt(f->release_mapping());
  model->validate();
  return model;
}

}  // namespace tapdiff::formats
