// A model's sha256 (what every dump names it by): remembered between runs in the hash cache while
// the file is unchanged, computed again once it changes, and the same when a thread prefetches it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "formats/load_model.h"
#include "formats/synth.h"
#include "model/sha256_cache.h"
#include "model/weights.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

namespace fs = std::filesystem;

// A small synth model file in dir.
fs::path write_model(const fs::path& dir) {
  formats::SynthOptions options;
  options.config = formats::synth_shape("tiny");
  const fs::path path = dir / "tiny.gguf";
  formats::write_synth_model(path, options);
  return path;
}

// What sha256sum says of the file.
std::string sha256sum(const fs::path& path) {
  const CommandResult r = run_command("sha256sum '" + path.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output.substr(0, 64);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ModelHash, AnUnchangedFileKeepsItsRememberedHashAChangedOneIsHashedAgain) {
  const fs::path dir = temp_dir("model-hash");
  const ScopedEnv cache_dir("TAPDIFF_CACHE_DIR", (dir / "cache").string());
  const fs::path path = write_model(dir);
  const std::string real = sha256sum(path);
  EXPECT_EQ(formats::load_model(path)->sha256(), real);
  const fs::path cache = model::sha256_cache_path();
  ASSERT_EQ(cache, dir / "cache" / "model-sha256.tsv");
  const std::string entry = read_text(cache);
  EXPECT_EQ(entry.substr(0, 65), real + "\t") << entry;
  EXPECT_NE(entry.find(fs::absolute(path).string()), std::string::npos) << entry;

  // The remembered hash is what a later run takes (a planted one shows it is not recomputed).
  const std::string planted(64, 'e');
  std::ofstream(cache) << planted << entry.substr(64);
  EXPECT_EQ(formats::load_model(path)->sha256(), planted);

  // A new modification time is a changed file: hashed again, its one entry replaced.
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  EXPECT_EQ(formats::load_model(path)->sha256(), real);
  const std::string after = read_text(cache);
  EXPECT_EQ(after.find(planted), std::string::npos) << after;
  EXPECT_EQ(std::count(after.begin(), after.end(), '\n'), 1) << after;
}

TEST(ModelHash, MalformedCacheLinesAreSkippedAndDropped) {
  const fs::path dir = temp_dir("model-hash-bad-cache");
  const ScopedEnv cache_dir("TAPDIFF_CACHE_DIR", dir.string());
  const fs::path path = write_model(dir);
  const std::string other = std::string(64, 'a') + "\t/elsewhere/m.gguf\t1\t2\t3\n";
  std::ofstream(model::sha256_cache_path()) << "not a line of the cache\n"
                                            << "zz\tkey\n"
                                            << other;
  EXPECT_EQ(formats::load_model(path)->sha256(), sha256sum(path));
  const std::string after = read_text(model::sha256_cache_path());
  EXPECT_EQ(after.find("not a line"), std::string::npos) << after;
  EXPECT_EQ(after.substr(0, other.size()), other) << after;  // another model's entry stays
}

TEST(ModelHash, APrefetchedHashIsTheFilesAndTheCacheCanBeTurnedOff) {
  const fs::path dir = temp_dir("model-hash-prefetch");
  const ScopedEnv cache_dir("TAPDIFF_CACHE_DIR", (dir / "cache").string());
  const ScopedEnv cache_off("TAPDIFF_HASH_CACHE", "off");
  EXPECT_TRUE(model::sha256_cache_path().empty());
  const fs::path path = write_model(dir);
  const auto m = formats::load_model(path);
  m->prefetch_sha256();
  m->prefetch_sha256();  // one thread: a second call changes nothing
  EXPECT_EQ(m->sha256(), sha256sum(path));
  EXPECT_EQ(formats::load_model(path)->sha256(), sha256sum(path));
  EXPECT_FALSE(fs::exists(dir / "cache"));  // nothing remembered
  // A model destroyed while its prefetch runs waits for it, and nothing is left behind.
  formats::load_model(path)->prefetch_sha256();
}

}  // namespace
}  // namespace tapdiff::testing
