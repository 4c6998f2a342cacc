#include "model/cache_dir.h"

#include <cstdlib>

namespace tapdiff::model {

std::filesystem::path cache_dir() {
  const auto set = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
  };
  if (const char* dir = set("TAPDIFF_CACHE_DIR")) return dir;
  if (const char* xdg = set("XDG_CACHE_HOME")) return std::filesystem::path(xdg) / "tapdiff";
  if (const char* home = set("HOME")) return std::filesystem::path(home) / ".cache" / "tapdiff";
  return std::filesystem::temp_directory_path() / "tapdiff-cache";
}

}  // namespace tapdiff::model
