#pragma once
// A progress line on stderr for long commands: on a terminal, redrawn in place at most ten times a
// second and erased when it goes out of scope; in a log (stderr not a terminal), a line of its own
// at most every 10 s, none for a command done sooner.
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

  // Draws the line as text(seconds since construction): at most every 100 ms on a terminal (always
  // when last), every 10 s in a log (when last too, once a line was written).
  void update(const std::function<std::string(double seconds)>& text, bool last = false);

 private:
  using Clock = std::chrono::steady_clock;
  bool terminal_ = false, drawn_ = false;
  Clock::time_point start_, last_;
};

}  // namespace tapdiff::cli
