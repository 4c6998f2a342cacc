#pragma once
// The input of the dump fuzz target: an HDF5 file as text, one object per line, so that
// libFuzzer mutates what a dump says (attributes, shapes, types, values, names) while libhdf5
// writes every file itself, well formed. (Corrupt HDF5 structure is libhdf5's own input: known
// issue, handled separately; docs/fuzzing.md.)
//   group PATH
//   attr PATH NAME TYPE VALUE    TYPE int | float (scalars), ints | floats (space-separated
//                                arrays, int32 / f64), str (variable-length UTF-8) | fstr
//                                (fixed-length): the rest of the line
//   data PATH TYPE SHAPE [V...]  TYPE i32 | u8 | i64 | f16 | f32 | f64 | str; SHAPE "-" (scalar)
//                                or dims "3x16" (up to 4, each up to 65536), "+" after them: chunked and
//                                unlimited along the first, "+z" also shuffle + deflate; the
//                                values repeat to fill the dataset, none: left unwritten
// Paths are absolute; missing groups are created on the way, an attribute's object too.
// Lines that cannot be applied (unknown words, names HDF5 refuses) are skipped.
#include <filesystem>
#include <string>
#include <string_view>

namespace tapdiff::fuzz {

void write_dump_text(const std::filesystem::path& path, std::string_view text);
// The text of an existing HDF5 file, at most `max_values` values per dataset, for seeds.
std::string read_dump_text(const std::filesystem::path& path, std::size_t max_values);

}  // namespace tapdiff::fuzz
