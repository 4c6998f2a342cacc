#pragma once
// Remembered sha256 of model files: hashing an 8B model's 16 GB takes longer than running it, and
// every dump names its model's hash. An entry is keyed by each file's absolute path, size,
// modification time (ns) and inode, so a file replaced or rewritten gets a new one (as build tools
// decide what changed). The cache is model-sha256.tsv in model::cache_dir(), newest entries last,
// at most kSha256CacheEntries; TAPDIFF_HASH_CACHE=off turns it off. A cache that cannot be read or
// written is no error: the hash is then computed, and malformed lines are skipped.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tapdiff::model {

inline constexpr std::size_t kSha256CacheEntries = 256;

// The cache file, or empty when the cache is off.
std::filesystem::path sha256_cache_path();

// The files as they are now: "path\tsize\tmtime_ns\tinode" of each, joined by '\t'; empty when a
// file cannot be described (gone, or a name with a tab or newline in it). Taken before hashing,
// so that a file changed while it is hashed does not match its entry afterwards.
std::string sha256_cache_key(const std::vector<std::filesystem::path>& files);
// The remembered hash of the files that `key` describes, if any.
std::optional<std::string> cached_sha256(const std::string& key);
// Remembers the hash of the files that `key` describes (replacing an entry of the same paths).
void remember_sha256(const std::string& key, const std::string& sha256);

}  // namespace tapdiff::model
