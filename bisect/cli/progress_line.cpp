#include "bisect/cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/core.h>

namespace tapdiff::cli {

ProgressLine::ProgressLine() : enabled_(::isatty(STDERR_FILENO) != 0), start_(Clock::now()) {}

ProgressLine::~ProgressLine() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void ProgressLine::update(const std::function<std::string(double seconds)>& text, bool last) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && !last) return;
  last_ = now, drawn_ = true;
  fmt::print(stderr, "\r\033[K{}", text(std::chrono::duration<double>(now - start_).count()));
  std::fflush(stderr);
}

}  // namespace tapdiff::cli
