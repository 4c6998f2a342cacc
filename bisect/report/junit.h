#pragma once
// JUnit XML of a finding, for CI: one testsuite, one testcase per compared (layer, op) named
// "LAYER/OP" ("3/rope_q"), classname "tapdiff.<class>"; an op past tolerance is a <failure> whose
// message names the metric and its bound ("nmse 2.1e-3 > 1e-8").
#include <string>

#include "bisect/judge/finding.h"

namespace tapdiff::bisect {

std::string junit_xml(const Finding& finding);

}  // namespace tapdiff::bisect
