#include "dumps/crash_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::dumps {
namespace {

// Reads heartbeats from fd until end of file (true) or until none came for kStallSeconds (false).
bool wait_for_end(int fd) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last = Clock::now();
  for (;;) {
    const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last);
    const auto left = std::chrono::seconds(kStallSeconds) - quiet;
    if (left.count() <= 0) return false;
    pollfd watch{fd, POLLIN, 0};
    const int ready = ::poll(&watch, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return false;
    if (ready < 0) return true;  // poll failing is not the child's fault: wait for it to end
    char beats[256];
    const ssize_t n = ::read(fd, beats, sizeof beats);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    last = Clock::now();
  }
}

int wait_for_child(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return 0;
  return status;
}

}  // namespace

void run_in_child(const std::string& path, const std::function<void(const std::function<void()>&)>& work) {
  int beats[2] = {-1, -1};
  if (::pipe2(beats, O_CLOEXEC) != 0)
    throw EnvironmentError(
        fmt::format("{}: cannot check the file in a child process: pipe: {}", path, std::strerror(errno)));
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(beats[0]);
    ::close(beats[1]);
    throw EnvironmentError(
        fmt::format("{}: cannot check the file in a child process: fork: {}", path, std::strerror(error)));
  }
  if (child == 0) {
    ::close(beats[0]);
    const std::function<void()> heartbeat = [fd = beats[1]] {
      const char beat = 1;
      [[maybe_unused]] const ssize_t n = ::write(fd, &beat, 1);
    };
    try {
      work(heartbeat);
    } catch (...) {  // the parent repeats the work and reports what it throws
    }
    ::_exit(0);
  }
  ::close(beats[1]);
  const bool ended = wait_for_end(beats[0]);
  ::close(beats[0]);
  if (!ended) ::kill(child, SIGKILL);
  const int status = wait_for_child(child);
  if (!ended)
    throw FormatError(
        fmt::format("{}: corrupt dump: libhdf5 reading it made no progress for {} s (a damaged file "
                    "can make it loop forever)",
                    path, kStallSeconds));
  if (WIFSIGNALED(status))
    throw FormatError(fmt::format("{}: corrupt dump: libhdf5 crashed reading it (signal {}, {})", path,
                                  WTERMSIG(status), ::strsignal(WTERMSIG(status))));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)  // a sanitizer's report, or an abort handler's exit
    throw FormatError(fmt::format("{}: corrupt dump: the process checking it with libhdf5 failed (exit status {})",
                                  path, WEXITSTATUS(status)));
}

}  // namespace tapdiff::dumps
