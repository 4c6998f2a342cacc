#pragma once
// What every command records about where a run came from, beyond the engine's own description
// (bisect::engine_metadata): the tool's version, the model file and its sha256, the command line
// and the time.
#include <string>

#include "dumps/schema.h"
#include "model/weights.h"

namespace tapdiff::cli {

void add_run_context(dumps::RunMetadata& metadata, const model::Model& model, const std::string& command_line);

}  // namespace tapdiff::cli
