#include "dumps/safetensors_writer.h"

#include <array>
#include <cstdint>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/output_file.h"

namespace tapdiff::dumps {
namespace {

template <typename T>
constexpr ElementType type_of() {
  if constexpr (std::is_same_v<T, float>) return ElementType::f32;
  if constexpr (std::is_same_v<T, double>) return ElementType::f64;
  if constexpr (std::is_same_v<T, std::int32_t>) return ElementType::i32;
  if constexpr (std::is_same_v<T, std::int64_t>) return ElementType::i64;
}

}  // namespace

template <typename T>
NamedArray named_array(std::string name, std::vector<std::int64_t> shape, std::span<const T> values) {
  NamedArray array;
  array.name = std::move(name);
  array.type = type_of<T>();
  array.type_name = std::string(safetensors_type_name(array.type));
  array.shape = std::move(shape);
  array.bytes = std::as_bytes(values);
  TAPDIFF_ASSERT(array.elements() == std::ssize(values), "{}: {} values for {} elements", array.name, values.size(),
                 array.elements());
  return array;
}

template NamedArray named_array<float>(std::string, std::vector<std::int64_t>, std::span<const float>);
template NamedArray named_array<double>(std::string, std::vector<std::int64_t>, std::span<const double>);
template NamedArray named_array<std::int32_t>(std::string, std::vector<std::int64_t>, std::span<const std::int32_t>);
template NamedArray named_array<std::int64_t>(std::string, std::vector<std::int64_t>, std::span<const std::int64_t>);

void write_safetensors(const std::filesystem::path& path, std::string_view what, std::span<const NamedArray> arrays,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const NamedArray& array : arrays) {
    const std::string_view type =
        array.type == ElementType::other ? array.type_name : safetensors_type_name(array.type);
    TAPDIFF_ASSERT(!type.empty(), "{}: no safetensors type", array.name);
    header[array.name] = {
        {"dtype", type}, {"shape", array.shape}, {"data_offsets", {offset, offset + array.bytes.size()}}};
    offset += array.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::array<char, 8> length{};
  for (std::size_t i = 0; i < length.size(); ++i) length[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  std::vector<std::string_view> pieces{std::string_view(length.data(), length.size()), text};
  for (const NamedArray& array : arrays)
    pieces.emplace_back(reinterpret_cast<const char*>(array.bytes.data()), array.bytes.size());
  model::write_file(path, what, pieces);
}

}  // namespace tapdiff::dumps
