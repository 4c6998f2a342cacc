#include "bench/bench_support.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double smallest(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
double largest(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

void write_section(const std::string& path, const std::string& name, const std::string& body) {
  std::string text;
  {
    std::ifstream in(path);
    if (in) {
      std::ostringstream all;
      all << in.rdbuf();
      text = all.str();
    }
  }
  const std::string begin = fmt::format("<!-- bench:{} -->", name), end = fmt::format("<!-- /bench:{} -->", name);
  const std::size_t b = text.find(begin);
  const std::size_t e = b == std::string::npos ? std::string::npos : text.find(end, b);
  const std::string section = begin + "\n" + body + end;
  if (b != std::string::npos && e != std::string::npos)
    text.replace(b, e + end.size() - b, section);
  else
    text += (text.empty() || text.ends_with("\n\n") ? "" : text.ends_with("\n") ? "\n" : "\n\n") + section + "\n";
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw EnvironmentError(fmt::format("{}: cannot write the benchmark section '{}'", path, name));
}

}  // namespace tapdiff::bench
