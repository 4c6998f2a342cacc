#include "formats/hf_experts.h"

#include <array>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/errors.h"

namespace tapdiff::formats {

using namespace model;

namespace {

// A projection's tensor name within an expert, per checkpoint layout.
struct ExpertTensor {
  std::string_view prefix;  // before the expert index
  std::string_view suffix;  // after it
  WeightKind kind;
};

constexpr ExpertTensor kPerExpert[] = {
    {"block_sparse_moe.experts.", ".w1.weight", WeightKind::expert_gate},
    {"block_sparse_moe.experts.", ".w3.weight", WeightKind::expert_up},
    {"block_sparse_moe.experts.", ".w2.weight", WeightKind::expert_down},
    {"mlp.experts.", ".gate_proj.weight", WeightKind::expert_gate},
    {"mlp.experts.", ".up_proj.weight", WeightKind::expert_up},
    {"mlp.experts.", ".down_proj.weight", WeightKind::expert_down},
};

// The expert index of `name` for one layout, or -1.
int expert_index(std::string_view name, const ExpertTensor& layout) {
  if (!name.starts_with(layout.prefix) || !name.ends_with(layout.suffix)) return -1;
  const std::string_view digits =
      name.substr(layout.prefix.size(), name.size() - layout.prefix.size() - layout.suffix.size());
  int e = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), e);
  return ec == std::errc{} && end == digits.data() + digits.size() && !digits.empty() ? e : -1;
}

// Of a row-major [rows, cols] matrix of `size`-byte values, the `out_rows` columns first, first +
// step, ... as the rows of the [out_rows, rows] result.
std::vector<std::byte> columns_as_rows(std::span<const std::byte> m, std::size_t size, std::int64_t rows,
                                       std::int64_t cols, std::int64_t first, std::int64_t step,
                                       std::int64_t out_rows) {
  std::vector<std::byte> out(static_cast<std::size_t>(out_rows * rows) * size);
  for (std::int64_t o = 0; o < out_rows; ++o)
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(out.data() + static_cast<std::size_t>(o * rows + r) * size,
                  m.data() + static_cast<std::size_t>(r * cols + first + o * step) * size, size);
  return out;
}

// FormatError: tensor `t` of `file` is not what the config implies.
[[noreturn]] void refuse(const std::string& file, const SafetensorsTensor& t, std::string_view expected,
                         const std::string& found) {
  throw_format_error(fmt::format("{}: tensor '{}': expected {}, found {}", file, t.name, expected, found));
}

void require_float(const std::string& file, const SafetensorsTensor& t) {
  if (!t.dtype) refuse(file, t, "dtype F32, F16 or BF16", fmt::format("dtype {}", t.dtype_name));
}

void require_shape(const std::string& file, const SafetensorsTensor& t, const std::vector<std::int64_t>& shape) {
  if (t.shape != shape)
    refuse(file, t, fmt::format("shape [{}] for this config", fmt::join(shape, ", ")),
           fmt::format("shape [{}]", fmt::join(t.shape, ", ")));
}

void require_layer(const std::string& file, const SafetensorsTensor& t, int layer, int n_layers) {
  if (layer >= n_layers)
    refuse(file, t, fmt::format("a layer below num_hidden_layers, {}", n_layers), fmt::format("layer {}", layer));
}

// (kind, first row or column, step) of a weight a fused experts' tensor holds.
struct Take {
  WeightKind kind;
  std::int64_t first, step;
};

}  // namespace

bool HfExperts::take_transposed(int layer, std::string_view name, const SafetensorsFile& f,
                                const SafetensorsTensor& t) {
  const Experts& ex = config_.experts;
  const bool gate_up = name == "mlp.experts.gate_up_proj", down = name == "mlp.experts.down_proj";
  const bool gate_up_bias = name == "mlp.experts.gate_up_proj_bias", down_bias = name == "mlp.experts.down_proj_bias";
  if ((!gate_up && !down && !gate_up_bias && !down_bias) || ex.count == 0) return false;
  const std::string file = f.path().string();
  require_float(file, t);
  require_layer(file, t, layer, config_.n_layers);
  const std::int64_t ffn = ex.ffn_dim, dim = config_.dim;
  // Per expert: a matrix [in, out] (a bias: [1, out]).
  const std::int64_t in = gate_up ? dim : down ? ffn : 1, out = gate_up || gate_up_bias ? 2 * ffn : dim;
  const std::vector<std::int64_t> shape =
      in == 1 ? std::vector<std::int64_t>{ex.count, out} : std::vector<std::int64_t>{ex.count, in, out};
  require_shape(file, t, shape);
  const std::size_t size = row_bytes(*t.dtype, 1), per_expert = static_cast<std::size_t>(in * out) * size;
  // Gate and up in alternate columns (gpt-oss), or gate's columns then up's (Llama 4).
  const bool halves = layout_ == HfExpertLayout::transposed_halves;
  const Take gate_take{gate_up ? WeightKind::expert_gate : WeightKind::expert_b_gate, 0, halves ? 1 : 2};
  const Take up_take{gate_up ? WeightKind::expert_up : WeightKind::expert_b_up, halves ? ffn : 1, halves ? 1 : 2};
  std::vector<Take> takes;
  if (gate_up || gate_up_bias) takes = {gate_take, up_take};
  if (down) takes = {{WeightKind::expert_down, 0, 1}};
  if (down_bias) takes = {{WeightKind::expert_b_down, 0, 1}};
  const std::int64_t width = gate_up || gate_up_bias ? ffn : dim;  // of each weight taken
  for (const Take& take : takes) {
    std::vector<std::byte> stacked;
    for (int e = 0; e < ex.count; ++e) {
      const std::vector<std::byte> rows =
          columns_as_rows(t.bytes.subspan(static_cast<std::size_t>(e) * per_expert, per_expert), size, in, out,
                          take.first, take.step, width);
      stacked.insert(stacked.end(), rows.begin(), rows.end());
    }
    const std::int64_t rows = in == 1 ? 1 : ex.count * width;
    const std::int64_t cols = in == 1 ? ex.count * width : in;
    model_.add(take.kind, layer, WeightTensor{t.name, *t.dtype, rows, cols, model_.hold(std::move(stacked)), {}});
  }
  return true;
}

bool HfExperts::take_mxfp4(int layer, std::string_view name, const SafetensorsFile& f, const SafetensorsTensor& t) {
  const bool gate_up = name.starts_with("mlp.experts.gate_up_proj_");
  if (!gate_up && !name.starts_with("mlp.experts.down_proj_")) return false;
  const bool blocks = name.ends_with("_blocks");
  if (!blocks && !name.ends_with("_scales")) return false;
  if (config_.experts.count == 0) return false;
  const std::string file = f.path().string();
  if (t.dtype_name != "U8")
    refuse(file, t, "dtype U8 (MXFP4's packed values or exponents)", fmt::format("dtype {}", t.dtype_name));
  require_layer(file, t, layer, config_.n_layers);
  const std::int64_t ffn = config_.experts.ffn_dim, dim = config_.dim;
  const std::int64_t out = gate_up ? 2 * ffn : dim, in = gate_up ? dim : ffn;
  if (in % 32 != 0) refuse(file, t, "rows of whole 32-value MXFP4 blocks", fmt::format("rows of {} values", in));
  std::vector<std::int64_t> shape{config_.experts.count, out, in / 32};
  if (blocks) shape.push_back(16);
  require_shape(file, t, shape);
  Mxfp4Halves& halves = mxfp4_[{layer, gate_up}];
  const SafetensorsTensor*& slot = blocks ? halves.blocks : halves.scales;
  if (slot != nullptr)
    throw_format_error(fmt::format("{}: tensors '{}' and '{}' are both layer {}'s {}", file, slot->name, t.name, layer,
                                   name.substr(name.rfind('.') + 1)));
  slot = &t;
  halves.file = file;
  if (halves.blocks != nullptr && halves.scales != nullptr) add_mxfp4(layer, gate_up, halves);
  return true;
}

void HfExperts::add_mxfp4(int layer, bool gate_up, const Mxfp4Halves& halves) {
  const Experts& ex = config_.experts;
  const std::int64_t out = gate_up ? 2 * ex.ffn_dim : config_.dim, groups = (gate_up ? config_.dim : ex.ffn_dim) / 32;
  constexpr std::size_t kBlock = 17;  // ggml's block_mxfp4: the exponent, then 16 bytes of values
  const auto packed = [&](std::int64_t row, std::int64_t g) {  // row of all experts' rows, block g
    std::array<std::byte, kBlock> block{};
    const std::size_t at = static_cast<std::size_t>(row * groups + g);
    block[0] = halves.scales->bytes[at];
    const auto value = [&](std::size_t k) {  // the k-th of the block's 32 nibbles, low nibble first
      return (std::to_integer<unsigned>(halves.blocks->bytes[at * 16 + k / 2]) >> (4 * (k % 2))) & 0xFu;
    };
    for (std::size_t j = 0; j < 16; ++j) block[1 + j] = static_cast<std::byte>(value(j) | (value(j + 16) << 4));
    return block;
  };
  // gate and up in alternate rows of gate_up (as gpt-oss's float checkpoints hold them in columns)
  const std::vector<Take> takes =
      gate_up ? std::vector<Take>{{WeightKind::expert_gate, 0, 2}, {WeightKind::expert_up, 1, 2}}
              : std::vector<Take>{{WeightKind::expert_down, 0, 1}};
  for (const auto& [kind, first, step] : takes) {
    const std::int64_t rows = out / step;
    std::vector<std::byte> bytes;
    bytes.reserve(static_cast<std::size_t>(ex.count * rows * groups) * kBlock);
    for (std::int64_t e = 0; e < ex.count; ++e)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t g = 0; g < groups; ++g) {
          const auto block = packed(e * out + first + r * step, g);
          bytes.insert(bytes.end(), block.begin(), block.end());
        }
    model_.add(kind, layer,
               WeightTensor{fmt::format("{} + _scales", halves.blocks->name),
                            DType::mxfp4,
                            ex.count * rows,
                            groups * 32,
                            model_.hold(std::move(bytes)),
                            {}});
  }
}

bool HfExperts::take(int layer, std::string_view name, const SafetensorsFile& f, const SafetensorsTensor& t) {
  if (layout_ == HfExpertLayout::transposed_alternating && take_mxfp4(layer, name, f, t)) return true;
  if (layout_ != HfExpertLayout::per_expert) return take_transposed(layer, name, f, t);
  const std::string file = f.path().string();
  const Experts& ex = config_.experts;
  for (const ExpertTensor& layout : kPerExpert) {
    const int e = expert_index(name, layout);
    if (e < 0) continue;
    if (ex.count == 0) return false;  // a dense config: the tensor is refused as unused
    if (e >= ex.count)
      refuse(file, t, fmt::format("an expert below the config's {} experts", ex.count), fmt::format("expert {}", e));
    require_float(file, t);
    const bool down = layout.kind == WeightKind::expert_down;
    require_shape(
        file, t,
        down ? std::vector<std::int64_t>{config_.dim, ex.ffn_dim} : std::vector<std::int64_t>{ex.ffn_dim, config_.dim});
    add_part(layout.kind, layer, e, t.name, file, *t.dtype, t.shape[0], t.shape[1], t.bytes);
    return true;
  }
  // transformers' fused tensors: in the MLP module, or beside it (Gemma 4's experts)
  const bool gate_up = name == "mlp.experts.gate_up_proj" || name == "experts.gate_up_proj";
  const bool down = name == "mlp.experts.down_proj" || name == "experts.down_proj";
  if (!gate_up && !down) return false;
  if (ex.count == 0) return false;
  require_float(file, t);
  const std::int64_t rows = down ? config_.dim : 2 * std::int64_t{ex.ffn_dim};
  const std::int64_t cols = down ? ex.ffn_dim : config_.dim;
  require_shape(file, t, {ex.count, rows, cols});
  const std::size_t row_size = row_bytes(*t.dtype, cols);
  const std::int64_t part_rows = down ? rows : ex.ffn_dim;
  for (int e = 0; e < ex.count; ++e)
    for (int half = 0; half < (down ? 1 : 2); ++half) {
      const WeightKind kind = down        ? WeightKind::expert_down
                              : half == 0 ? WeightKind::expert_gate
                                          : WeightKind::expert_up;
      const std::size_t first_row = static_cast<std::size_t>(e * rows + half * part_rows);
      add_part(kind, layer, e, t.name, file, *t.dtype, part_rows, cols,
               t.bytes.subspan(first_row * row_size, static_cast<std::size_t>(part_rows) * row_size));
    }
  return true;
}

void HfExperts::add_part(WeightKind kind, int layer, int expert, const std::string& tensor_name,
                         const std::string& file, DType dtype, std::int64_t rows, std::int64_t cols,
                         std::span<const std::byte> bytes) {
  Stack& s = stacks_[{kind, layer}];
  if (s.parts.empty()) {
    s.file = file, s.dtype = dtype, s.part_rows = rows, s.cols = cols;
    s.parts.resize(static_cast<std::size_t>(config_.experts.count));
    s.names.resize(s.parts.size());
  }
  const auto e = static_cast<std::size_t>(expert);
  if (!s.names[e].empty())
    throw_format_error(fmt::format("{}: tensors '{}' and '{}' are both {} of expert {} in layer {}", file, s.names[e],
                                   tensor_name, weight_kind_name(kind), expert, layer));
  if (dtype != s.dtype)
    throw_format_error(fmt::format("{}: tensor '{}': expected dtype {} as the layer's other experts ('{}'), found {}",
                                   file, tensor_name, dtype_name(s.dtype), s.names[0].empty() ? "" : s.names[0],
                                   dtype_name(dtype)));
  s.parts[e] = bytes;
  s.names[e] = tensor_name;
}

void HfExperts::add_to(Model& model) const {
  for (const auto& [key, halves] : mxfp4_)
    if (halves.blocks == nullptr || halves.scales == nullptr) {
      const SafetensorsTensor& seen = halves.blocks != nullptr ? *halves.blocks : *halves.scales;
      throw_format_error(fmt::format("{}: tensor '{}': expected its {} beside it (MXFP4 needs both), found none",
                                     halves.file, seen.name, halves.blocks != nullptr ? "_scales" : "_blocks"));
    }
  for (const auto& [key, s] : stacks_) {
    const auto& [kind, layer] = key;
    for (std::size_t e = 0; e < s.parts.size(); ++e)
      if (s.names[e].empty())
        throw_format_error(fmt::format("{}: layer {}: expected {} of each of the {} experts, found none for expert {}",
                                       s.file, layer, weight_kind_name(kind), s.parts.size(), e));
    if (layer >= config_.n_layers)
      throw_format_error(fmt::format("{}: tensor '{}' belongs to layer {}, but num_hidden_layers is {}", s.file,
                                     s.names[0], layer, config_.n_layers));
    const bool fused = s.names.front() == s.names.back();
    WeightTensor t;
    t.name = fused ? s.names.front() : fmt::format("{} ... {}", s.names.front(), s.names.back());
    t.dtype = s.dtype;
    t.rows = s.part_rows * std::ssize(s.parts);
    t.cols = s.cols;
    t.parts = s.parts;
    model.add(kind, layer, std::move(t));
  }
}

}  // namespace tapdiff::formats
