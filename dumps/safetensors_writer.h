#pragma once
// Named arrays written as one safetensors file, the layout ArrayFile reads (array_file.h): the
// header's length (8 bytes, little-endian), the JSON header (each array's dtype, shape and
// data_offsets; string metadata under "__metadata__"), padded with spaces to 8 bytes, then the data.
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "dumps/array_file.h"

namespace tapdiff::dumps {

// An array over a tensor's storage: a HostTensor's f32() or f64(), a vector of ids (the span must
// outlive the write).
template <typename T>
NamedArray named_array(std::string name, std::vector<std::int64_t> shape, std::span<const T> values);

// EnvironmentError "<what> <path>: ..." when it cannot be written (model/output_file.h). An array
// of type other is written with its type_name (a type this reader does not read: for tests of
// what it refuses).
void write_safetensors(const std::filesystem::path& path, std::string_view what, std::span<const NamedArray> arrays,
                       const std::map<std::string, std::string>& metadata);

}  // namespace tapdiff::dumps
