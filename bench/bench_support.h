#pragma once
// What the benchmark programs share: medians, the machine's description, CPU time, and writing a
// result section into a Markdown file (docs/benchmarks.md) between markers, so a rerun replaces
// its own section and leaves the rest of the file alone.
#include <string>
#include <vector>

namespace tapdiff::bench {

double median(std::vector<double> v);
double smallest(const std::vector<double>& v);
double largest(const std::vector<double>& v);

std::string cpu_model();  // "AMD EPYC ..." from /proc/cpuinfo
double cpu_seconds();     // user + system time of every thread of this process so far
std::string today();      // YYYY-MM-DD

// Replaces the text between "<!-- bench:NAME -->" and "<!-- /bench:NAME -->" in `path` by `body`
// (the markers stay), or appends both markers and the body when the file has none. Throws
// EnvironmentError naming the file when it cannot be read or written.
void write_section(const std::string& path, const std::string& name, const std::string& body);

}  // namespace tapdiff::bench
