#include "bisect/cli/run_context.h"

namespace tapdiff::cli {

void add_run_context(dumps::RunMetadata& metadata, const model::Model& model, const std::string& command_line) {
  metadata.tool_version = TAPDIFF_VERSION;
  metadata.model_path = model.path().string();
  metadata.model_sha256 = model.sha256();
  metadata.command_line = command_line;
  metadata.created = dumps::utc_now_iso8601();
}

}  // namespace tapdiff::cli
