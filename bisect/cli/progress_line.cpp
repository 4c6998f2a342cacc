#include "bisect/cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/core.h>

namespace tapdiff::cli {

ProgressLine::ProgressLine() : terminal_(::isatty(STDERR_FILENO) != 0), start_(Clock::now()) {}

ProgressLine::~ProgressLine() {
  if (terminal_ && drawn_) std::fputs("\r\033[K", stderr);
}

void ProgressLine::update(const std::function<std::string(double seconds)>& text, bool last) {
  const auto now = Clock::now();
  const auto gap = terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  if (now - (drawn_ ? last_ : start_) < gap && !(last && drawn_)) return;
  last_ = now, drawn_ = true;
  const std::string line = text(std::chrono::duration<double>(now - start_).count());
  if (terminal_)
    fmt::print(stderr, "\r\033[K{}", line);
  else
    fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

}  // namespace tapdiff::cli
