#include "dumps/tap_filter.h"

#include <algorithm>
#include <iterator>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::dumps {

TapFilter::TapFilter(const std::string& spec) : spec_(spec) {
  if (spec == "all") {
    kind_ = Kind::all;
  } else if (spec == "layers") {
    kind_ = Kind::layers;
  } else if (spec == "none") {
    kind_ = Kind::none;
  } else if (spec.empty()) {
    throw UsageError("--taps: empty; expected all, layers, none or a regular expression over 'LAYER/OP'");
  } else {
    kind_ = Kind::regex;
    try {
      regex_.emplace(spec, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw UsageError(fmt::format("--taps: '{}' is not a valid regular expression: {}", spec, e.what()));
    }
  }
}

bool TapFilter::matches(const model::TensorId& id) const {
  switch (kind_) {
    case Kind::all: return true;
    case Kind::none: return false;
    case Kind::layers: {
      static constexpr model::Op kStream[] = {model::Op::embed,    model::Op::o_proj,        model::Op::attn_post_norm,
                                              model::Op::ffn_down, model::Op::moe_out,       model::Op::moe_sum,
                                              model::Op::ffn_sum,  model::Op::ffn_post_norm, model::Op::ffn_residual,
                                              model::Op::ple_norm, model::Op::ple_residual,  model::Op::final_norm,
                                              model::Op::logits};
      return std::find(std::begin(kStream), std::end(kStream), id.op) != std::end(kStream);
    }
    case Kind::regex: return std::regex_search(model::to_string(id), *regex_);
  }
  return false;
}

}  // namespace tapdiff::dumps
