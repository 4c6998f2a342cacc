#pragma once
// Whether a model given on the command line is the one a dump was run on.
#include <string>

#include "dumps/dump_reader.h"
#include "model/weights.h"

namespace tapdiff::cli {

// UsageError naming `option`, its value and the dump when the model is not the dump's: another
// sha256 (when the dump has one), or a model_config that differs (every differing key named).
void require_model_of(const dumps::DumpReader& dump, const model::Model& model, const std::string& option,
                      const std::string& spec);

}  // namespace tapdiff::cli
