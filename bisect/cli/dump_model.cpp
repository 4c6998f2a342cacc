#include "bisect/cli/dump_model.h"

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::cli {

void require_model_of(const dumps::DumpReader& dump, const model::Model& model, const std::string& option,
                      const std::string& spec) {
  const std::string& sha = dump.metadata().model_sha256;
  if (!sha.empty() && sha != model.sha256())
    throw UsageError(fmt::format("{} {}: not the model of {}: sha256 {} where the dump says {}", option, spec,
                                 dump.path(), model.sha256(), sha));
  const std::string differ = dumps::config_differences(model::to_json(model.config()), dump.metadata().model_config);
  if (!differ.empty())
    throw UsageError(fmt::format("{} {}: not the model of {}: the model's config and the dump's differ in {}", option,
                                 spec, dump.path(), differ));
}

}  // namespace tapdiff::cli
