#pragma once
// Helpers shared by the tests: paths to the shared models and the tapdiff binary, temp folders,
// running the CLI.
#include <filesystem>
#include <optional>
#include <string>

namespace tapdiff::testing {

// ../shared/models/stories260K/stories260K.gguf, or empty when the shared folder is absent.
std::filesystem::path stories_gguf();
// ../shared/models/stories260K/hf, or empty when absent.
std::filesystem::path stories_hf();
// A fresh, empty folder under the system temp dir, unique to this test.
std::filesystem::path temp_dir(const std::string& name);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs the tapdiff binary with the given arguments (a shell-quoted string).
CommandResult run_tapdiff(const std::string& args);

// Sets an environment variable for its lifetime (so child processes see it), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

}  // namespace tapdiff::testing

// Skips the current test with a clear message when the shared stories260K model is absent.
#define TAPDIFF_REQUIRE_STORIES()                                                             \
  do {                                                                                        \
    if (::tapdiff::testing::stories_gguf().empty())                                           \
      GTEST_SKIP() << "../shared/models/stories260K is absent: skipping the real-model test"; \
  } while (0)
