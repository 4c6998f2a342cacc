#pragma once
// The checks --repro writes beside its case: the files of bisect/report/repro/, compiled in as
// text by CMake (repro_files.cpp in the build tree).
#include <span>
#include <string_view>

namespace tapdiff::bisect {

struct ReproFile {
  std::string_view name;  // "check.py", ...
  std::string_view text;
};

std::span<const ReproFile> repro_files();

}  // namespace tapdiff::bisect
