#include "model/sha256_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "model/cache_dir.h"

namespace tapdiff::model {

std::string sha256_cache_key(const std::vector<std::filesystem::path>& files) {
  std::string key;
  for (const std::filesystem::path& f : files) {
    std::error_code ec;
    const std::string path = std::filesystem::absolute(f, ec).string();
    struct stat st {};
    if (ec || path.find_first_of("\t\n") != std::string::npos || ::stat(path.c_str(), &st) != 0) return {};
    const long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    key += fmt::format("{}{}\t{}\t{}\t{}", key.empty() ? "" : "\t", path, static_cast<long long>(st.st_size), mtime_ns,
                       static_cast<unsigned long long>(st.st_ino));
  }
  return key;
}

namespace {

// The key's paths alone (every fourth field from the first): an entry for the same files, changed.
std::string paths_of(const std::string& key) {
  std::string paths;
  std::istringstream fields(key);
  std::string field;
  for (int i = 0; std::getline(fields, field, '\t'); ++i)
    if (i % 4 == 0) paths += field + '\n';
  return paths;
}

bool is_sha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The cache's well-formed lines: (sha256, key).
std::vector<std::pair<std::string, std::string>> read_entries(const std::filesystem::path& path) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string sha = line.substr(0, tab), key = line.substr(tab + 1);
    if (is_sha256(sha) && !key.empty()) entries.emplace_back(std::move(sha), std::move(key));
  }
  return entries;
}

}  // namespace

std::filesystem::path sha256_cache_path() {
  const char* off = std::getenv("TAPDIFF_HASH_CACHE");
  if (off != nullptr && std::string(off) == "off") return {};
  return cache_dir() / "model-sha256.tsv";
}

std::optional<std::string> cached_sha256(const std::string& key) {
  const std::filesystem::path cache = sha256_cache_path();
  if (cache.empty() || key.empty()) return std::nullopt;
  std::optional<std::string> found;
  for (auto& [sha, k] : read_entries(cache))
    if (k == key) found = std::move(sha);  // the newest entry wins
  return found;
}

void remember_sha256(const std::string& key, const std::string& sha256) {
  const std::filesystem::path cache = sha256_cache_path();
  if (cache.empty() || key.empty() || !is_sha256(sha256)) return;
  std::error_code ec;
  std::filesystem::create_directories(cache.parent_path(), ec);
  std::vector<std::pair<std::string, std::string>> entries = read_entries(cache);
  std::erase_if(entries, [&](const auto& e) { return paths_of(e.second) == paths_of(key); });
  entries.emplace_back(sha256, key);
  const std::size_t first = entries.size() > kSha256CacheEntries ? entries.size() - kSha256CacheEntries : 0;
  // A whole new file renamed over the old one: a reader never sees half of it.
  const std::filesystem::path temp = cache.string() + fmt::format(".{}.tmp", static_cast<long>(::getpid()));
  {
    std::ofstream out(temp, std::ios::trunc);
    for (std::size_t i = first; i < entries.size(); ++i) out << entries[i].first << '\t' << entries[i].second << '\n';
    if (!out.flush()) {
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, cache, ec);
  if (ec) std::filesystem::remove(temp, ec);
}

}  // namespace tapdiff::model
