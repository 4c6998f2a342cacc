#pragma once
// Which op outputs a run taps, from the --taps option.
#include <cstdint>
#include <optional>
#include <regex>
#include <string>

#include "model/graph.h"

namespace tapdiff::dumps {

// --taps values:
//   all     every op of the graph
//   layers  the residual stream and what each block adds to it: embed, each layer's attention
//           and FFN updates (o_proj or attn_post_norm; ffn_down, a mixture's moe_out, moe_sum or
//           ffn_sum, or ffn_post_norm: the values added
//           to the stream, judged on their own, so that a wrong update far smaller than the stream
//           is not diluted in it) and its output (ffn_residual), final_norm and logits
//   none    nothing
//   REGEX   ops whose "LAYER/OP" name ("3/q_proj", "-1/embed", "5/logits") contains a match
//           (std::regex ECMAScript, regex_search): "^0/", "rope_[qk]$", "^(2|3)/attn$"
class TapFilter {
 public:
  enum class Kind : std::uint8_t { all, layers, none, regex };

  TapFilter() = default;  // all
  // UsageError("--taps: ...") naming the regex and its error when spec is not a valid regex.
  explicit TapFilter(const std::string& spec);

  bool matches(const model::TensorId& id) const;
  Kind kind() const { return kind_; }
  const std::string& spec() const { return spec_; }

 private:
  Kind kind_ = Kind::all;
  std::string spec_ = "all";
  std::optional<std::regex> regex_;
};

}  // namespace tapdiff::dumps
