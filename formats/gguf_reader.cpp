#include "formats/gguf_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_set>
#include <utility>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/load_model.h"
#include "model/dtype.h"
#include "model/errors.h"
#include "model/mapped_file.h"
#include "model/printable.h"
#include "model/rope.h"

namespace tapdiff::formats {

using namespace model;

namespace gguf {

namespace {
// Per value type id 0..12: its name and its smallest encoding (to bound counts read from a file).
constexpr std::pair<std::string_view, std::uint64_t> kValueTypes[] = {
    {"u8", 1},   {"i8", 1},     {"u16", 2},    {"i16", 2}, {"u32", 4}, {"i32", 4}, {"f32", 4},
    {"bool", 1}, {"string", 8}, {"array", 12}, {"u64", 8}, {"i64", 8}, {"f64", 8}};
}  // namespace

std::string_view value_type_name(ValueType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kValueTypes) ? kValueTypes[i].first : "?";
}

namespace {

// ggml's type ids and names (ggml.h): those tapdiff reads, then those it knows only by name.
struct GgmlType {
  std::uint32_t id;
  std::string_view name;
  std::optional<DType> dtype;
};

constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", DType::f32},        {1, "F16", DType::f16},        {2, "Q4_0", DType::q4_0},
    {3, "Q4_1", DType::q4_1},      {6, "Q5_0", DType::q5_0},      {7, "Q5_1", DType::q5_1},
    {8, "Q8_0", DType::q8_0},      {10, "Q2_K", DType::q2_k},     {11, "Q3_K", DType::q3_k},
    {12, "Q4_K", DType::q4_k},     {13, "Q5_K", DType::q5_k},     {14, "Q6_K", DType::q6_k},
    {20, "IQ4_NL", DType::iq4_nl}, {23, "IQ4_XS", DType::iq4_xs}, {30, "BF16", DType::bf16},
    {39, "MXFP4", DType::mxfp4},   {9, "Q8_1", std::nullopt},     {15, "Q8_K", std::nullopt},
    {16, "IQ2_XXS", std::nullopt}, {17, "IQ2_XS", std::nullopt},  {18, "IQ3_XXS", std::nullopt},
    {19, "IQ1_S", std::nullopt},   {21, "IQ3_S", std::nullopt},   {22, "IQ2_S", std::nullopt},
    {24, "I8", std::nullopt},      {25, "I16", std::nullopt},     {26, "I32", std::nullopt},
    {27, "I64", std::nullopt},     {28, "F64", std::nullopt},     {29, "IQ1_M", std::nullopt},
    {34, "TQ1_0", std::nullopt},   {35, "TQ2_0", std::nullopt},
};

}  // namespace

std::uint32_t ggml_type(DType t) {
  for (const GgmlType& g : kGgmlTypes)
    if (g.dtype == t) return g.id;
  TAPDIFF_ASSERT(false, "no ggml type for {}", dtype_name(t));
  return 0;
}

std::optional<DType> dtype_from_ggml_type(std::uint32_t id) {
  for (const GgmlType& g : kGgmlTypes)
    if (g.id == id) return g.dtype;
  return std::nullopt;
}

std::string ggml_type_name(std::uint32_t id) {
  for (const GgmlType& g : kGgmlTypes)
    if (g.id == id) return std::string(g.name);
  return fmt::format("unknown type {}", id);
}

std::string readable_ggml_types() {
  std::string names;
  for (const GgmlType& g : kGgmlTypes)
    if (g.dtype) (names += names.empty() ? "" : ", ") += std::string(g.name);
  return names;
}

}  // namespace gguf

namespace {

using gguf::ValueType;
constexpr int kMaxArrayDepth = 4;
constexpr std::uint32_t kMaxDims = 4;

std::uint64_t min_value_bytes(ValueType t) { return gguf::kValueTypes[static_cast<std::size_t>(t)].second; }

// Reads little-endian values from the mapped bytes; every read is bounds-checked.
class Cursor {
 public:
  Cursor(std::span<const std::byte> data, std::string file) : data_(data), file_(std::move(file)) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return data_.size() - pos_; }
  const std::string& file() const { return file_; }

  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const auto n = read<std::uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  // A count of items of at least `item_bytes` each; FormatError when they cannot fit in the file.
  std::uint64_t read_count(std::string_view what, std::uint64_t item_bytes) {
    const auto n = read<std::uint64_t>(what);
    if (n > remaining() / item_bytes) {
      const std::uint64_t end = n > (std::numeric_limits<std::uint64_t>::max() - pos_) / item_bytes
                                    ? std::numeric_limits<std::uint64_t>::max()
                                    : pos_ + n * item_bytes;
      fail("truncated or corrupt: {} is {}, so its items need at least bytes [{}, {}) but the file has {} bytes", what,
           n, pos_, end, data_.size());
    }
    return n;
  }

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw_format_error(fmt::format("{}: {}", file_, fmt::format(f, std::forward<Args>(args)...)));
  }

 private:
  void need(std::uint64_t n, std::string_view what) const {
    if (n > remaining())
      throw_format_error(fmt::format("{}: truncated: {} needs bytes [{}, {}) but the file has {} bytes", file_, what,
                                     pos_, n > std::numeric_limits<std::uint64_t>::max() - pos_ ? n : pos_ + n,
                                     data_.size()));
  }

  std::span<const std::byte> data_;
  std::string file_;
  std::uint64_t pos_ = 0;
};

GgufValue read_value(Cursor& c, ValueType type, const std::string& key, int depth);

ValueType read_type(Cursor& c, const std::string& key) {
  const auto id = c.read<std::uint32_t>(fmt::format("the value type of metadata '{}'", key));
  if (id > static_cast<std::uint32_t>(ValueType::f64))
    c.fail("metadata '{}': expected a value type 0..12, found {}", key, id);
  return static_cast<ValueType>(id);
}

GgufValue read_array(Cursor& c, const std::string& key, int depth) {
  if (depth >= kMaxArrayDepth) c.fail("metadata '{}': arrays nested deeper than {}", key, kMaxArrayDepth);
  GgufValue v;
  v.type = ValueType::array;
  v.element_type = read_type(c, key);
  const std::uint64_t n = c.read_count(fmt::format("the length of array '{}'", key), min_value_bytes(v.element_type));
  std::vector<GgufValue> items;
  items.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) items.push_back(read_value(c, v.element_type, key, depth + 1));
  v.value = std::move(items);
  return v;
}

GgufValue read_value(Cursor& c, ValueType type, const std::string& key, int depth) {
  const std::string what = fmt::format("the value of metadata '{}'", key);
  GgufValue v;
  v.type = type;
  switch (type) {
    case ValueType::u8: v.value = std::uint64_t{c.read<std::uint8_t>(what)}; break;
    case ValueType::u16: v.value = std::uint64_t{c.read<std::uint16_t>(what)}; break;
    case ValueType::u32: v.value = std::uint64_t{c.read<std::uint32_t>(what)}; break;
    case ValueType::u64: v.value = c.read<std::uint64_t>(what); break;
    case ValueType::i8: v.value = std::int64_t{c.read<std::int8_t>(what)}; break;
    case ValueType::i16: v.value = std::int64_t{c.read<std::int16_t>(what)}; break;
    case ValueType::i32: v.value = std::int64_t{c.read<std::int32_t>(what)}; break;
    case ValueType::i64: v.value = c.read<std::int64_t>(what); break;
    case ValueType::f32: v.value = double{c.read<float>(what)}; break;
    case ValueType::f64: v.value = c.read<double>(what); break;
    case ValueType::boolean: v.value = c.read<std::uint8_t>(what) != 0; break;
    case ValueType::string: v.value = c.read_string(what); break;
    case ValueType::array: return read_array(c, key, depth);
  }
  return v;
}

// a * b, or nullopt when it exceeds `limit`.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t limit) {
  if (a != 0 && b > limit / a) return std::nullopt;
  return a * b;
}

GgufTensorInfo read_tensor_info(Cursor& c, std::size_t index) {
  GgufTensorInfo t;
  t.name = c.read_string(fmt::format("the name of tensor #{}", index));
  const auto n_dims = c.read<std::uint32_t>(fmt::format("the dimension count of tensor '{}'", t.name));
  if (n_dims < 1 || n_dims > kMaxDims)
    c.fail("tensor '{}': expected 1 to {} dimensions, found {}", t.name, kMaxDims, n_dims);
  for (std::uint32_t d = 0; d < n_dims; ++d) {
    const auto ne = c.read<std::uint64_t>(fmt::format("the shape of tensor '{}'", t.name));
    if (ne > (std::uint64_t{1} << 40))
      c.fail("tensor '{}': expected dimensions up to 2^40, found {} in dimension {}", t.name, ne, d);
    t.ne.push_back(static_cast<std::int64_t>(ne));
  }
  const auto type = c.read<std::uint32_t>(fmt::format("the type of tensor '{}'", t.name));
  const auto dtype = gguf::dtype_from_ggml_type(type);
  if (!dtype)
    c.fail("tensor '{}': type {} ({}) is not supported; tapdiff reads {}", t.name, type, gguf::ggml_type_name(type),
           gguf::readable_ggml_types());
  t.dtype = *dtype;
  t.offset = c.read<std::uint64_t>(fmt::format("the data offset of tensor '{}'", t.name));
  return t;
}

// Points t.bytes at its data, checking alignment, block size and the file bounds.
void locate_tensor(const Cursor& c, GgufTensorInfo& t, std::span<const std::byte> file, std::uint64_t data_offset,
                   std::uint32_t alignment) {
  if (t.offset % alignment != 0)
    c.fail("tensor '{}': expected a data offset aligned to {}, found {}", t.name, alignment, t.offset);
  if (t.ne[0] % block_size(t.dtype) != 0)
    c.fail("tensor '{}': expected a row length that is a multiple of {} for {}, found {}", t.name, block_size(t.dtype),
           dtype_name(t.dtype), t.ne[0]);
  const std::uint64_t size = file.size();
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 62;  // keeps the sums below from overflowing
  std::optional<std::uint64_t> bytes = row_bytes(t.dtype, t.ne[0]);
  for (std::size_t d = 1; d < t.ne.size() && bytes; ++d)
    bytes = checked_mul(*bytes, static_cast<std::uint64_t>(t.ne[d]), kLimit);
  if (!bytes || t.offset > kLimit || data_offset + t.offset + *bytes > size)
    c.fail("truncated: tensor '{}' of shape [{}] {} needs bytes [{}, {}) but the file has {} bytes", t.name,
           fmt::join(t.ne, ", "), dtype_name(t.dtype), data_offset + std::min(t.offset, kLimit),
           bytes ? fmt::format("{}", data_offset + std::min(t.offset, kLimit) + *bytes) : std::string("beyond 2^62"),
           size);
  t.bytes = file.subspan(data_offset + t.offset, *bytes);
}

// As llama.cpp requires, each tensor's data starts where the one before it (in header order) ends,
// padded to the alignment; and the file ends with the last tensor's data (its padding optional).
// Bytes inserted into or appended to the data section fail here instead of shifting the weights.
void check_data_layout(const Cursor& c, const std::vector<GgufTensorInfo>& tensors, std::uint64_t data_offset,
                       std::uint32_t alignment, std::uint64_t file_size) {
  std::uint64_t expected = 0;
  for (const GgufTensorInfo& t : tensors) {
    if (t.offset != expected)
      c.fail(
          "tensor '{}': expected its data at offset {} of the data section (right after the tensor before it), "
          "found offset {}",
          t.name, expected, t.offset);
    expected = (t.offset + t.bytes.size() + alignment - 1) / alignment * alignment;
  }
  if (tensors.empty()) return;
  const std::uint64_t end = data_offset + tensors.back().offset + tensors.back().bytes.size();
  if (file_size > data_offset + expected)
    c.fail(
        "expected the file to end with the last tensor's data at byte {} (padded to {}), found {} bytes: "
        "bytes inserted or appended",
        end, data_offset + expected, file_size);
}

bool is_integer_type(ValueType t) {
  return t != ValueType::f32 && t != ValueType::f64 && t != ValueType::boolean && t != ValueType::string &&
         t != ValueType::array;
}

}  // namespace

bool GgufValue::is_integer() const {
  return std::holds_alternative<std::uint64_t>(value) || std::holds_alternative<std::int64_t>(value);
}

std::string GgufValue::to_string(std::size_t max_items) const {
  if (const auto* items = array()) {
    std::string s = fmt::format("[{} x {}]", gguf::value_type_name(element_type), items->size());
    for (std::size_t i = 0; i < items->size() && i < max_items; ++i) s += " " + (*items)[i].to_string(max_items);
    return items->size() > max_items ? s + " ..." : s;
  }
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          return fmt::format("{:?}", x);
        else if constexpr (std::is_same_v<T, std::vector<GgufValue>>)
          return "[]";
        else
          return fmt::format("{}", x);
      },
      value);
}

GgufFile::GgufFile(const std::filesystem::path& path) : path_(path), file_(std::make_unique<MappedFile>(path)) {
  const std::span<const std::byte> bytes = file_->bytes();
  file_size_ = bytes.size();
  Cursor c(bytes, path.string());
  const auto magic = c.read<std::array<char, 4>>("the GGUF magic");
  if (std::string_view(magic.data(), 4) != "GGUF")
    c.fail("expected the magic 'GGUF', found {:?}", std::string_view(magic.data(), 4));
  version_ = c.read<std::uint32_t>("the GGUF version");
  if (version_ != 2 && version_ != 3) c.fail("unsupported GGUF version {} (expected 2 or 3)", version_);
  const std::uint64_t n_tensors = c.read_count("the tensor count", 32);
  const std::uint64_t n_kv = c.read_count("the metadata count", 13);
  std::unordered_set<std::string> keys;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string(fmt::format("the key of metadata #{}", i));
    const ValueType type = read_type(c, key);
    GgufValue value = read_value(c, type, key, 0);
    if (!keys.insert(key).second) c.fail("metadata key '{}' appears twice", key);
    metadata_.emplace_back(std::move(key), std::move(value));
  }
  if (const auto a = get_int("general.alignment")) {
    if (*a <= 0 || *a > (1 << 20) || !std::has_single_bit(static_cast<std::uint64_t>(*a)))
      c.fail("general.alignment: expected a power of two up to 2^20, found {}", *a);
    alignment_ = static_cast<std::uint32_t>(*a);
  }
  std::unordered_set<std::string> names;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    tensors_.push_back(read_tensor_info(c, i));
    if (!names.insert(tensors_.back().name).second) c.fail("tensor '{}' appears twice", tensors_.back().name);
  }
  data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  for (GgufTensorInfo& t : tensors_) locate_tensor(c, t, bytes, data_offset_, alignment_);
  check_data_layout(c, tensors_, data_offset_, alignment_, file_size_);
}

GgufFile::~GgufFile() = default;

std::unique_ptr<MappedFile> GgufFile::release_mapping() { return std::move(file_); }

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : metadata_)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void GgufFile::wrong_type(std::string_view key, const GgufValue& v, std::string_view expected) const {
  throw_format_error(fmt::format("{}: metadata '{}': expected {}, found {} {}", path_.string(), key, expected,
                                 gguf::value_type_name(v.type), v.to_string(4)));
}

std::optional<std::int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&v->value)) return *i;
  const auto* u = std::get_if<std::uint64_t>(&v->value);
  if (u == nullptr || *u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    wrong_type(key, *v, "an integer");
  return static_cast<std::int64_t>(*u);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_float()) wrong_type(key, *v, "f32 or f64");
  return std::get<double>(v->value);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::boolean) wrong_type(key, *v, "bool");
  return std::get<bool>(v->value);
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::string) wrong_type(key, *v, "string");
  return std::get<std::string>(v->value);
}

const GgufValue* GgufFile::find_array(std::string_view key, bool (*element_ok)(ValueType),
                                      std::string_view expected) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return nullptr;
  if (v->type != ValueType::array || !element_ok(v->element_type)) wrong_type(key, *v, expected);
  return v;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find_array(
      key, [](ValueType t) { return t == ValueType::string; }, "an array of strings");
  if (v == nullptr) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(v->array()->size());
  for (const GgufValue& item : *v->array()) out.push_back(std::get<std::string>(item.value));
  return out;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find_array(
      key, [](ValueType t) { return t == ValueType::f32 || t == ValueType::f64; }, "an array of floats");
  if (v == nullptr) return std::nullopt;
  std::vector<float> out;
  out.reserve(v->array()->size());
  for (const GgufValue& item : *v->array()) out.push_back(static_cast<float>(std::get<double>(item.value)));
  return out;
}

std::optional<std::vector<bool>> GgufFile::get_bool_array(std::string_view key) const {
  const GgufValue* v = find_array(
      key, [](ValueType t) { return t == ValueType::boolean; }, "an array of bools");
  if (v == nullptr) return std::nullopt;
  std::vector<bool> out;
  out.reserve(v->array()->size());
  for (const GgufValue& item : *v->array()) out.push_back(std::get<bool>(item.value));
  return out;
}

std::optional<std::vector<std::int32_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find_array(key, is_integer_type, "an array of integers");
  if (v == nullptr) return std::nullopt;
  std::vector<std::int32_t> out;
  out.reserve(v->array()->size());
  for (const GgufValue& item : *v->array()) {
    const auto* i = std::get_if<std::int64_t>(&item.value);
    const auto* u = std::get_if<std::uint64_t>(&item.value);
    const bool fits =
        i ? (*i >= std::numeric_limits<std::int32_t>::min() && *i <= std::numeric_limits<std::int32_t>::max())
          : (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()));
    if (!fits) wrong_type(key, item, "an array of 32-bit integers");
    out.push_back(static_cast<std::int32_t>(i ? *i : static_cast<std::int64_t>(*u)));
  }
  return out;
}

constexpr int kIntMax = std::numeric_limits<int>::max();

int gguf_token_id(const GgufFile& f, const std::string& key) {
  const auto v = f.get_int(key);
  return v && *v >= 0 && *v <= kIntMax ? static_cast<int>(*v) : -1;
}

namespace {

// The WeightKind of a GGUF tensor name, or nullopt for a tensor the model does not use; a layer's
// tensor by the name the family gives it (GgufRecipe::layer_name).
std::optional<WeightPart> gguf_weight(std::string_view name, const ModelConfig& c) {
  static constexpr std::pair<std::string_view, WeightKind> kGlobal[] = {
      {"token_embd.weight", WeightKind::token_embd},
      {"position_embd.weight", WeightKind::pos_embd},
      {"output_norm.weight", WeightKind::output_norm},
      {"output_norm.bias", WeightKind::output_norm_b},
      {"output.weight", WeightKind::output},
      {"output.bias", WeightKind::output_b},
      {"per_layer_token_embd.weight", WeightKind::ple_token_embd},  // per-layer inputs (gemma4)
      {"per_layer_model_proj.weight", WeightKind::ple_model_proj},
      {"per_layer_proj_norm.weight", WeightKind::ple_proj_norm}};
  static constexpr std::pair<std::string_view, WeightKind> kLayer[] = {
      {"attn_norm.weight", WeightKind::attn_norm},
      {"attn_norm.bias", WeightKind::attn_norm_b},
      {"attn_q.weight", WeightKind::wq},
      {"attn_k.weight", WeightKind::wk},
      {"attn_v.weight", WeightKind::wv},
      {"attn_q.bias", WeightKind::bq},
      {"attn_k.bias", WeightKind::bk},
      {"attn_v.bias", WeightKind::bv},
      {"attn_q_norm.weight", WeightKind::q_norm},
      {"attn_k_norm.weight", WeightKind::k_norm},
      {"attn_output.weight", WeightKind::wo},
      {"attn_output.bias", WeightKind::bo},
      {"post_attention_norm.weight", WeightKind::attn_post_norm},
      {"ffn_norm.weight", WeightKind::ffn_norm},
      {"ffn_norm.bias", WeightKind::ffn_norm_b},
      {"ffn_gate.weight", WeightKind::ffn_gate},
      {"ffn_up.weight", WeightKind::ffn_up},
      {"ffn_down.weight", WeightKind::ffn_down},
      {"ffn_gate.bias", WeightKind::b_gate},
      {"ffn_up.bias", WeightKind::b_up},
      {"ffn_down.bias", WeightKind::b_down},
      {"post_ffw_norm.weight", WeightKind::ffn_post_norm},
      {"ffn_gate_inp.weight", WeightKind::moe_router},
      {"ffn_gate_inp.bias", WeightKind::moe_router_b},
      {"attn_sinks.weight", WeightKind::attn_sinks},
      {"ffn_gate_exps.bias", WeightKind::expert_b_gate},
      {"ffn_up_exps.bias", WeightKind::expert_b_up},
      {"ffn_down_exps.bias", WeightKind::expert_b_down},
      {"exp_probs_b.bias", WeightKind::moe_score_bias},
      {"ffn_gate_exps.weight", WeightKind::expert_gate},
      {"ffn_up_exps.weight", WeightKind::expert_up},
      {"ffn_down_exps.weight", WeightKind::expert_down},
      {"ffn_gate_shexp.weight", WeightKind::shexp_gate},
      {"ffn_up_shexp.weight", WeightKind::shexp_up},
      {"ffn_down_shexp.weight", WeightKind::shexp_down},
      {"ffn_gate_inp_shexp.weight", WeightKind::shexp_gate_inp},
      {"attn_q_a.weight", WeightKind::wq_a},  // latent attention (deepseek2)
      {"attn_q_a_norm.weight", WeightKind::q_a_norm},
      {"attn_q_b.weight", WeightKind::wq},
      {"attn_kv_a_mqa.weight", WeightKind::wkv_a},
      {"attn_kv_a_norm.weight", WeightKind::kv_a_norm},
      {"attn_kv_b.weight", WeightKind::wk},  // split into wk and wv (gguf_weights)
      {"attn_k_b.weight", WeightKind::wk},   // each head's rows transposed (add_key_up_projection)
      {"attn_v_b.weight", WeightKind::wv},
      {"layer_output_scale.weight", WeightKind::layer_scale},  // gemma4
      {"inp_gate.weight", WeightKind::ple_gate},
      {"proj.weight", WeightKind::ple_proj},
      {"post_norm.weight", WeightKind::ple_post_norm},
      {"ffn_gate_inp.scale", WeightKind::moe_router_scale},
      {"ffn_down_exps.scale", WeightKind::moe_expert_scale},
      {"pre_ffw_norm_2.weight", WeightKind::moe_norm},
      {"post_ffw_norm_1.weight", WeightKind::dense_post_norm},
      {"post_ffw_norm_2.weight", WeightKind::moe_post_norm},
      {"ffn_gate_up_exps.weight", WeightKind::expert_gate}};  // split into expert_gate and expert_up (gguf_weights)
  for (const auto& [n, kind] : kGlobal)
    if (name == n) return WeightPart{kind, -1};
  if (!name.starts_with("blk.")) return std::nullopt;
  name.remove_prefix(4);
  int layer = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (ec != std::errc{} || end == name.data() || end == name.data() + name.size() || *end != '.') return std::nullopt;
  name.remove_prefix(static_cast<std::size_t>(end - name.data()) + 1);
  if (const auto rename = family_spec(c.family).gguf.layer_name) name = rename(name, c);
  for (const auto& [n, kind] : kLayer)
    if (name == n) return WeightPart{kind, layer};
  return std::nullopt;
}

// The tensor as [rows, cols]: ne[0] = cols, ne[1] = rows, any further dimensions must be 1; the
// experts' tensors (ne[2] = experts) and latent attention's per-head ones stack their matrices' rows.
WeightTensor to_weight(const GgufFile& f, const GgufTensorInfo& t, bool stacked = false) {
  for (std::size_t d = stacked ? 3 : 2; d < t.ne.size(); ++d)
    if (t.ne[d] != 1)
      throw_format_error(fmt::format("{}: tensor '{}': expected {} (dimensions after the {} of 1), found shape [{}]",
                                     f.path().string(), t.name, stacked ? "a stack of matrices" : "a matrix",
                                     stacked ? "third" : "second", fmt::join(t.ne, ", ")));
  const std::int64_t experts = stacked && t.ne.size() > 2 ? t.ne[2] : 1;
  return WeightTensor{t.name, t.dtype, (t.ne.size() > 1 ? t.ne[1] : 1) * experts, t.ne[0], t.bytes, {}};
}

// A tensor whose third dimension stacks matrices: the experts' (ne[2] = experts) and latent
// attention's attn_k_b and attn_v_b (ne[2] = heads).
bool is_stacked(std::string_view name, WeightKind kind) {
  return kind == WeightKind::expert_gate || kind == WeightKind::expert_up || kind == WeightKind::expert_down ||
         name.ends_with(".attn_k_b.weight") || name.ends_with(".attn_v_b.weight");
}

// attn_k_b, as llama.cpp's converter writes it for the absorbed form: [nope, kv_lora_rank, heads],
// each head's no-RoPE key rows of kv_b_proj transposed; read back as wk [heads * nope, kv_lora_rank]
// of the f32 values the file's type decodes to.
void add_key_up_projection(const GgufFile& f, const GgufTensorInfo& t, int layer, const ModelConfig& c, Model& model) {
  const std::int64_t nope = c.mla.nope_dim, rank = c.mla.kv_rank, heads = c.n_heads;
  if (t.ne.size() != 3 || t.ne[0] != nope || t.ne[1] != rank || t.ne[2] != heads)
    throw_format_error(fmt::format(
        "{}: tensor '{}': expected shape [{}, {}, {}] (each head's key rows transposed: qk_nope, kv_lora_rank, "
        "heads), found [{}]",
        f.path().string(), t.name, nope, rank, heads, fmt::join(t.ne, ", ")));
  const WeightTensor stacked = to_weight(f, t, true);
  std::vector<float> row(static_cast<std::size_t>(nope)), wk(static_cast<std::size_t>(heads * nope * rank));
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t j = 0; j < rank; ++j) {
      dequantize_row(t.dtype, stacked.row(h * rank + j), row.data(), nope);
      for (std::int64_t i = 0; i < nope; ++i)
        wk[static_cast<std::size_t>(((h * nope) + i) * rank + j)] = row[static_cast<std::size_t>(i)];
    }
  std::vector<std::byte> bytes(wk.size() * sizeof(float));
  std::memcpy(bytes.data(), wk.data(), bytes.size());
  const WeightPart part{WeightKind::wk, layer};
  model.add_parts(WeightTensor{t.name, DType::f32, heads * nope, rank, model.hold(std::move(bytes)), {}},
                  std::span(&part, 1), f.path().string());
}

// The experts' biases, [width, experts] in the file: one vector of every expert's in turn.
bool is_stacked_expert_bias(WeightKind kind) {
  return kind == WeightKind::expert_b_gate || kind == WeightKind::expert_b_up || kind == WeightKind::expert_b_down;
}

// The file's general.architecture, as llama.cpp names the family (and prefixes its keys with).
std::string architecture(const GgufFile& f) {
  const auto arch = f.get_string("general.architecture");
  if (!arch) throw_format_error(fmt::format("{}: missing metadata key 'general.architecture'", f.path().string()));
  return *arch;
}

constexpr std::string_view kRopeFreqs = "rope_freqs.weight";
constexpr std::string_view kRopeFactorsLong = "rope_factors_long.weight",
                           kRopeFactorsShort = "rope_factors_short.weight";

// A per-pair factor tensor (rope_freqs, rope_factors_long/short): F32 of rotary_dim / 2 values.
std::vector<double> rope_factor_tensor(const GgufFile& f, const GgufTensorInfo& t, const ModelConfig& c) {
  const int pairs = (c.rotary_dim > 0 ? c.rotary_dim : c.head_dim) / 2;
  if (t.dtype != DType::f32 || t.ne.size() != 1 || t.ne[0] != pairs)
    throw_format_error(
        fmt::format("{}: tensor '{}': expected F32 of shape [{}] (rope.dimension_count / 2), found {} "
                    "of shape [{}]",
                    f.path().string(), t.name, pairs, dtype_name(t.dtype), fmt::join(t.ne, ", ")));
  std::vector<float> values(static_cast<std::size_t>(pairs));
  std::memcpy(values.data(), t.bytes.data(), values.size() * sizeof(float));
  return {values.begin(), values.end()};
}

// YaRN as llama.cpp computes it (llama_context's yarn_attn_factor, ggml's rope_yarn): over
// rope.scaling.original_context_length (the trained context where absent), beta_fast and
// beta_slow (32 and 1 where absent), the correction range truncated to whole pairs as
// transformers' is; cos and sin times get_mscale(factor, 1) / get_mscale(factor,
// yarn_log_multiplier) where that key is given (llama.cpp assumes the config's mscale is 1), else
// get_mscale(factor, 1), times rope.scaling.attn_factor (1 where absent).
void read_yarn(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  RopeScaling& s = c.rope_scaling;
  s.type = RopeType::yarn;
  const auto factor = f.get_float(prefix + "rope.scaling.factor");
  if (!factor || *factor < 1.0)
    throw_format_error(fmt::format("{}: {}rope.scaling.factor: expected a YaRN factor of 1 or more, found {}",
                                   f.path().string(), prefix, factor ? fmt::format("{}", *factor) : "none"));
  s.factor = *factor;
  s.original_context = int_key(f, prefix + "rope.scaling.original_context_length", c.context_length);
  s.beta_fast = float_key(f, prefix + "rope.scaling.yarn_beta_fast", 32.0);
  s.beta_slow = float_key(f, prefix + "rope.scaling.yarn_beta_slow", 1.0);
  s.truncate = true;
  const double log_multiplier = float_key(f, prefix + "rope.scaling.yarn_log_multiplier", 0.0);
  s.attention_factor =
      (log_multiplier != 0.0 ? yarn_mscale(s.factor) / yarn_mscale(s.factor, log_multiplier) : yarn_mscale(s.factor)) *
      float_key(f, prefix + "rope.scaling.attn_factor", 1.0);
}

// RoPE as llama.cpp reads it: whole heads rotated (rope.dimension_count = head_dim), or their
// leading channels in a family that rotates part of each head; rope.scaling.type none or linear
// (rope.scaling.factor, or the older rope.scale_linear), and the per-pair divisors of
// rope_freqs.weight (Llama 3.1+); YaRN in a family whose recipe reads it (its attn_factor refused
// without it). Other scalings are refused.
void read_rope_scaling(const GgufFile& f, const GgufRecipe& family, ModelConfig& c) {
  const std::string file = f.path().string(), arch = architecture(f), prefix = arch + ".";
  if (const int rotary = int_key(f, prefix + "rope.dimension_count", c.head_dim); rotary != c.head_dim) {
    if (!family.partial_rotary)
      throw_format_error(
          fmt::format("{}: {}rope.dimension_count = {} is not supported: llama.cpp's {} rotates whole "
                      "heads ({} channels)",
                      file, prefix, rotary, arch, c.head_dim));
    if (rotary <= 0 || rotary > c.head_dim || rotary % 2 != 0)
      throw_format_error(
          fmt::format("{}: {}rope.dimension_count = {}: expected an even count of channels up to the "
                      "head's {}",
                      file, prefix, rotary, c.head_dim));
    c.rotary_dim = rotary;
  }
  RopeScaling& s = c.rope_scaling;
  const std::string type = f.get_string(prefix + "rope.scaling.type").value_or("none");
  if (type == "linear") {
    s.type = RopeType::linear;
    s.factor = f.get_float(prefix + "rope.scaling.factor").value_or(1.0);
  } else if (type == "yarn" && family.yarn) {
    read_yarn(f, prefix, c);
  } else if (type != "none") {
    throw_format_error(fmt::format("{}: {}rope.scaling.type '{}' is not supported: tapdiff implements none and linear",
                                   file, prefix, type));
  }
  // llama.cpp scales cos and sin by it with any RoPE; tapdiff reads it with YaRN's
  if (family.yarn && type != "yarn" && f.find(prefix + "rope.scaling.attn_factor") != nullptr)
    throw_format_error(
        fmt::format("{}: metadata '{}rope.scaling.attn_factor' without rope.scaling.type yarn is not "
                    "supported",
                    file, prefix));
  if (const auto old = f.get_float(prefix + "rope.scale_linear")) {
    if (type == "linear")
      throw_format_error(fmt::format("{}: both rope.scaling.type linear and rope.scale_linear", file));
    s.type = RopeType::linear;
    s.factor = *old;
  }
  if (const GgufTensorInfo* t = f.find_tensor(kRopeFreqs)) s.freq_factors = rope_factor_tensor(f, *t, c);
}

// The family of general.architecture `arch`; FormatError naming `file` and the architectures otherwise.
const FamilySpec& family_of(std::string_view arch, const std::string& file) {
  std::vector<std::string_view> names;
  for (const FamilySpec* family : all_families()) {
    const auto& archs = family->gguf.architectures;
    if (std::find(archs.begin(), archs.end(), arch) != archs.end()) return *family;
    names.insert(names.end(), archs.begin(), archs.end());
  }
  throw_format_error(
      fmt::format("{}: general.architecture: expected one of {}, found '{}'", file, fmt::join(names, ", "), arch));
}

// LongRoPE as llama.cpp computes it (llama_model::get_rope_factors): each pair's frequency divided
// by its factor of rope_factors_long.weight when the context the run has (n_ctx) exceeds
// rope.scaling.original_context_length, else of rope_factors_short.weight; cos and sin times
// rope.scaling.attn_factor (1 when absent). The families without it refuse the tensors
// (add_weights) and the key (refuse_unknown_keys).
void read_longrope(const GgufFile& f, const GgufRecipe& family, const LoadOptions& options, ModelConfig& c) {
  if (!family.longrope) return;
  const std::string file = f.path().string(), prefix = architecture(f) + ".";
  const GgufTensorInfo* long_factors = f.find_tensor(kRopeFactorsLong);
  const GgufTensorInfo* short_factors = f.find_tensor(kRopeFactorsShort);
  const auto attn_factor = f.get_float(prefix + "rope.scaling.attn_factor");
  if (long_factors == nullptr && short_factors == nullptr) {
    if (attn_factor)
      throw_format_error(
          fmt::format("{}: {}rope.scaling.attn_factor = {} without LongRoPE's factor tensors is not "
                      "supported",
                      file, prefix, *attn_factor));
    return;
  }
  if (long_factors == nullptr || short_factors == nullptr)
    throw_format_error(fmt::format("{}: LongRoPE: expected both tensors '{}' and '{}', found only '{}'", file,
                                   kRopeFactorsLong, kRopeFactorsShort,
                                   long_factors != nullptr ? kRopeFactorsLong : kRopeFactorsShort));
  RopeScaling& s = c.rope_scaling;
  if (s.type != RopeType::standard || !s.freq_factors.empty())
    throw_format_error(fmt::format("{}: LongRoPE beside rope.scaling.type '{}' or {} is not supported", file,
                                   rope_type_name(s.type), kRopeFreqs));
  s.type = RopeType::longrope;
  s.original_context = int_key(f, prefix + "rope.scaling.original_context_length", std::nullopt);
  s.long_factor = rope_factor_tensor(f, *long_factors, c);
  s.short_factor = rope_factor_tensor(f, *short_factors, c);
  s.attention_factor = attn_factor.value_or(1.0);
  s.by_run_context = true;
  s.run_context = options.context_size;
}

// Keys under "<arch>." that change the math must be read above; the others are listed here.
void refuse_unknown_keys(const GgufFile& f, const ModelConfig& c, const GgufRecipe& family) {
  static const std::set<std::string_view> kKnown = {
      "block_count", "embedding_length", "attention.head_count", "attention.head_count_kv", "attention.key_length",
      "feed_forward_length", "context_length", "attention.sliding_window", "rope.freq_base",
      "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "vocab_size", "rope.dimension_count",
      "rope.scaling.type", "rope.scaling.factor", "rope.scale_linear",
      // Informational: llama.cpp itself computes nothing from them (granite reads finetuned above).
      "rope.scaling.original_context_length", "rope.scaling.finetuned"};
  const std::string arch = architecture(f), prefix = arch + ".";
  for (const auto& [key, value] : f.metadata()) {
    if (!key.starts_with(prefix)) continue;
    const std::string_view rest = std::string_view(key).substr(prefix.size());
    if (rest == "attention.value_length" && value.is_integer() && f.get_int(key) == c.head_dim) continue;
    if (std::find(family.unread.begin(), family.unread.end(), rest) != family.unread.end())
      throw_format_error(fmt::format("{}: metadata '{}' is not supported: llama.cpp's {} computes nothing with it",
                                     f.path().string(), key, arch));
    if (!kKnown.contains(rest) && std::find(family.keys.begin(), family.keys.end(), rest) == family.keys.end())
      throw_format_error(
          fmt::format("{}: metadata '{}' = {} is not supported: tapdiff implements only the keys whose "
                      "meaning it knows (docs/models.md)",
                      f.path().string(), key, value.to_string(4)));
  }
}

// The norms' epsilon under the key of their kind (layer_norm_epsilon for LayerNorms,
// layer_norm_rms_epsilon for RMSNorms, as llama.cpp reads them); the other kind's key is refused.
void read_norm_eps(const GgufFile& f, ModelConfig& c) {
  const std::string prefix = architecture(f) + ".";
  const bool layer = c.block.norm == NormKind::layer;
  const std::string own = prefix + (layer ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon");
  const std::string other = prefix + (layer ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon");
  if (f.find(other) != nullptr)
    throw_format_error(fmt::format("{}: metadata '{}' is not supported: llama.cpp's {} norms are {}, of '{}'",
                                   f.path().string(), other, prefix.substr(0, prefix.size() - 1),
                                   layer ? "LayerNorms" : "RMSNorms", own));
  c.norm_eps = float_key(f, own, 1e-5);
}

ModelConfig gguf_config(const GgufFile& f, const LoadOptions& options) {
  const std::string file = f.path().string();
  ModelConfig c;
  const std::string arch = architecture(f);
  const FamilySpec& spec = family_of(arch, file);
  const GgufRecipe& family = spec.gguf;
  c.family = spec.family;
  auto key = [&](std::string_view k) { return arch + "." + std::string(k); };
  c.n_layers = int_key(f, key("block_count"), std::nullopt);
  if (static_cast<std::size_t>(c.n_layers) >
      f.tensors().size())  // every layer holds a tensor: per-layer lists stay small
    throw_format_error(fmt::format("{}: {}: expected at most one layer per tensor ({} tensors), found {}", file,
                                   key("block_count"), f.tensors().size(), c.n_layers));
  c.dim = int_key(f, key("embedding_length"), std::nullopt);
  c.n_heads = int_key(f, key("attention.head_count"), std::nullopt);
  c.head_dim = int_key(f, key("attention.key_length"), c.n_heads > 0 ? c.dim / c.n_heads : 0);
  if (family.layer_arrays) {  // the family reads each layer's heads; the widths are ffn_dims where they differ
    c.n_kv_heads = layer_int_key(f, key("attention.head_count_kv"), c.n_layers, c.n_heads).front();
    std::vector<int> widths = layer_int_key(f, key("feed_forward_length"), c.n_layers, std::nullopt);
    c.ffn_dim = widths.front();
    if (std::any_of(widths.begin(), widths.end(), [&](int w) { return w != c.ffn_dim; }))
      c.ffn_dims = std::move(widths);
  } else {
    c.n_kv_heads = int_key(f, key("attention.head_count_kv"), c.n_heads);
    c.ffn_dim = int_key(f, key("feed_forward_length"), std::nullopt);
  }
  c.context_length = int_key(f, key("context_length"), 0);
  c.sliding_window = int_key(f, key("attention.sliding_window"), 0);
  c.rope_base = f.get_float(key("rope.freq_base")).value_or(10000.0);
  c.rope_style = family.rope_style;
  read_rope_scaling(f, family, c);
  read_longrope(f, family, options, c);
  refuse_unknown_keys(f, c, family);
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr)
    throw_format_error(fmt::format("{}: missing tensor: expected token_embd.weight, found none", file));
  const WeightTensor e = to_weight(f, *embd);
  if (e.rows > kIntMax) throw_format_error(fmt::format("{}: token_embd.weight has {} rows: too many", file, e.rows));
  c.vocab = static_cast<int>(e.rows);
  if (const auto v = f.get_int(key("vocab_size")); v && *v != c.vocab)
    throw_format_error(
        fmt::format("{}: {} is {}, but token_embd.weight has {} rows", file, key("vocab_size"), *v, c.vocab));
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  if (c.tied_output && family.output_required)
    throw_format_error(
        fmt::format("{}: missing tensor: expected output.weight (llama.cpp's {} reads the logits' "
                    "matrix from it, not from token_embd.weight), found none",
                    file, arch));
  c.block.qkv_bias = has_layer_tensor(f, "attn_q.bias") || has_layer_tensor(f, "attn_qkv.bias");
  if (family.read) family.read(f, arch + ".", c);
  read_norm_eps(f, c);
  if (c.tied_output && f.find_tensor("output.weight") != nullptr)
    throw_format_error(
        fmt::format("{}: tensor 'output.weight' is not supported: llama.cpp's {} ties the output to "
                    "token_embd.weight and computes nothing with it",
                    file, arch));
  c.bos_token = gguf_token_id(f, "tokenizer.ggml.bos_token_id");
  c.eos_token = gguf_token_id(f, "tokenizer.ggml.eos_token_id");
  return c;
}

// The weights a GGUF tensor holds: one, or the parts of a fused projection in row order (q, k and
// v in attn_qkv, which llama.cpp reads for every family; gate and up in the ffn_up of a family
// whose graph splits it); none for a tensor the model does not use.
std::vector<WeightPart> gguf_weights(std::string_view name, const ModelConfig& c) {
  for (const auto& [fused, q] : {std::pair<std::string_view, std::string_view>{"attn_qkv.weight", "attn_q.weight"},
                                 {"attn_qkv.bias", "attn_q.bias"}})
    if (name.ends_with(fused)) {
      const auto part = gguf_weight(std::string(name.substr(0, name.size() - fused.size())) + std::string(q), c);
      if (!part) return {};
      const bool bias = part->kind == WeightKind::bq;
      return {{bias ? WeightKind::bq : WeightKind::wq, part->layer, c.q_dim()},
              {bias ? WeightKind::bk : WeightKind::wk, part->layer, c.kv_dim()},
              {bias ? WeightKind::bv : WeightKind::wv, part->layer, c.kv_dim()}};
    }
  const auto named = gguf_weight(name, c);
  if (!named) return {};
  if (name.ends_with(".attn_kv_b.weight"))  // per head its no-RoPE key rows, then its value rows
    return {{WeightKind::wk, named->layer, c.mla.nope_dim, c.n_heads},
            {WeightKind::wv, named->layer, c.mla.v_dim, c.n_heads}};
  if (name.ends_with(".ffn_gate_up_exps.weight")) {  // per expert its gate rows, then its up rows
    if (c.experts.count == 0) return {};
    return {{WeightKind::expert_gate, named->layer, c.experts.ffn_dim, c.experts.count},
            {WeightKind::expert_up, named->layer, c.experts.ffn_dim, c.experts.count}};
  }
  if (named->kind == WeightKind::ffn_up && family_spec(c.family).gguf.gate_up_in_ffn_up)
    return {{WeightKind::ffn_gate, named->layer, c.ffn_dim}, {WeightKind::ffn_up, named->layer, c.ffn_dim}};
  return {*named};
}

void add_weights(const GgufFile& f, const ModelConfig& c, Model& model) {
  const std::string file = f.path().string();
  for (const GgufTensorInfo& t : f.tensors()) {
    const std::vector<WeightPart> parts = gguf_weights(t.name, c);
    // read into the config's RoPE scaling
    if (parts.empty() && (t.name == kRopeFreqs || (c.rope_scaling.by_run_context &&
                                                   (t.name == kRopeFactorsLong || t.name == kRopeFactorsShort))))
      continue;
    if (parts.empty())
      throw_format_error(fmt::format("{}: tensor '{}' is not supported: tapdiff computes no op that uses it", file,
                                     printable(t.name)));
    if (parts.front().layer >= c.n_layers)
      throw_format_error(fmt::format("{}: tensor '{}' belongs to layer {}, but {}.block_count is {}", file,
                                     printable(t.name), parts.front().layer, architecture(f), c.n_layers));
    if (t.name.ends_with(".attn_k_b.weight")) {
      add_key_up_projection(f, t, parts.front().layer, c, model);
      continue;
    }
    WeightTensor weight = to_weight(f, t, is_stacked(t.name, parts.front().kind));
    if (is_stacked_expert_bias(parts.front().kind)) weight.cols *= std::exchange(weight.rows, 1);
    model.add_parts(weight, parts, file);
  }
}

// xIELU's learned scalars as llama.cpp's converter writes them: the arrays xielu.alpha_p,
// xielu.alpha_n, xielu.beta and xielu.eps (not under the architecture), a value per layer, before
// the softplus that llama.cpp and transformers alike apply to alpha_p and alpha_n.
void add_xielu_scalars(const GgufFile& f, Model& model) {
  const ModelConfig& c = model.config();
  for (const auto& [key, kind] : {std::pair<std::string_view, WeightKind>{"xielu.alpha_p", WeightKind::xielu_alpha_p},
                                  {"xielu.alpha_n", WeightKind::xielu_alpha_n},
                                  {"xielu.beta", WeightKind::xielu_beta},
                                  {"xielu.eps", WeightKind::xielu_eps}}) {
    const auto values = f.get_float_array(key);
    if (!values || values->size() != static_cast<std::size_t>(c.n_layers))
      throw_format_error(fmt::format("{}: metadata '{}': expected an array of {} floats (one per layer), found {}",
                                     f.path().string(), key, c.n_layers,
                                     values ? fmt::format("{} of them", values->size()) : "none"));
    for (int l = 0; l < c.n_layers; ++l)
      model.add_values(kind, l, fmt::format("{}[{}]", key, l),
                       std::span(*values).subspan(static_cast<std::size_t>(l), 1));
  }
}

}  // namespace

std::unique_ptr<Model> read_gguf(const std::filesystem::path& path, const LoadOptions& options) {
  GgufFile file(path);
  const ModelConfig config = gguf_config(file, options);
  config.validate(path.string());
  auto model = std::make_unique<Model>(path, config);
  add_weights(file, config, *model);
  if (family_spec(config.family).gguf.weightless_norms) add_unit_norms(*model);
  add_unit_head_norms(*model);
  add_values_from_keys(*model);
  if (config.block.activation == Activation::xielu) add_xielu_scalars(file, *model);
  model->adopt(file.release_mapping());
  model->validate();
  return model;
}

}  // namespace tapdiff::formats
