#include "model/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "model/errors.h"

namespace tapdiff::model {
namespace {

std::string kind_of(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return "neither a file nor a directory";
}

std::string prefix(std::string_view what, const std::filesystem::path& path) {
  return what.empty() ? path.string() : fmt::format("{} {}", what, path.string());
}

}  // namespace

std::string describe_path_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "no such file" : std::strerror(errno);
  return kind_of(st);
}

int open_regular_file(const std::filesystem::path& path, std::string_view what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      throw UsageError(fmt::format("{}: expected a regular file, found no such file", prefix(what, path)));
    if (err == ENXIO)  // a socket, or a FIFO opened without blocking
      throw UsageError(
          fmt::format("{}: expected a regular file, found {}", prefix(what, path), describe_path_kind(path)));
    throw EnvironmentError(fmt::format("{}: cannot open: {}", prefix(what, path), std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string kind = kind_of(st);
    ::close(fd);
    throw UsageError(fmt::format("{}: expected a regular file, found {}", prefix(what, path), kind));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string read_regular_file(const std::filesystem::path& path, std::string_view what) {
  const int fd = open_regular_file(path, what);
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw EnvironmentError(fmt::format("{}: cannot read: {}", prefix(what, path), std::strerror(err)));
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace tapdiff::model
