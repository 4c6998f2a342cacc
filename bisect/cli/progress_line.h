#pragma once
// A progress line on stderr for long commands, redrawn in place at most ten times a second, only
// when stderr is a terminal; erased when it goes out of scope.
#include <chrono>
#include <functional>
#include <string>

namespace tapdiff::cli {

class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Redraws the line as text(seconds since construction); always when last, else at most every 100 ms.
  void update(const std::function<std::string(double seconds)>& text, bool last = false);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_ = false, drawn_ = false;
  Clock::time_point start_, last_;
};

}  // namespace tapdiff::cli
