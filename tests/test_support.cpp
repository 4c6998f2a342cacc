#include "tests/test_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace tapdiff::testing {

std::filesystem::path stories_gguf() {
  const std::filesystem::path p = std::filesystem::path(TAPDIFF_SHARED_MODELS) / "stories260K" / "stories260K.gguf";
  return std::filesystem::exists(p) ? p : std::filesystem::path{};
}

std::filesystem::path stories_hf() {
  const std::filesystem::path p = std::filesystem::path(TAPDIFF_SHARED_MODELS) / "stories260K" / "hf";
  return std::filesystem::exists(p / "config.json") ? p : std::filesystem::path{};
}

std::filesystem::path temp_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string unique = name;
  if (info != nullptr) unique = std::string(info->test_suite_name()) + "." + info->name() + "." + name;
  const auto dir = std::filesystem::temp_directory_path() / "tapdiff-tests" / unique;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

CommandResult run_tapdiff(const std::string& args) {
  const std::string command = std::string("'") + TAPDIFF_BINARY + "' " + args + " 2>&1";
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) saved_ = old;
  ::setenv(name_.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (saved_)
    ::setenv(name_.c_str(), saved_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

}  // namespace tapdiff::testing
