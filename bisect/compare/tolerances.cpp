#include "bisect/compare/tolerances.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <tuple>

#include <fmt/core.h>
#include <toml++/toml.h>

#include "bisect/compare/text_format.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "model/toml_text.h"

namespace tapdiff::bisect {

std::string Violation::text() const {
  if (metric == "nonfinite")
    return fmt::format("{} NaN/Inf element{} where the runs disagree", static_cast<std::int64_t>(value),
                       value == 1 ? "" : "s");
  if (metric == "nonfinite_both")
    return fmt::format("{} element{} NaN/Inf in both runs alike, not compared", static_cast<std::int64_t>(value),
                       value == 1 ? "" : "s");
  const char* op = metric == "cosine" ? "<" : ">";
  return fmt::format("{} {} {} {}", metric, short_number(value), op, short_number(bound));
}

std::vector<Violation> check(const Bound& bound, const Metrics& m) {
  std::vector<Violation> out;
  if (m.nonfinite > 0) out.push_back({"nonfinite", static_cast<double>(m.nonfinite), 0});
  if (m.nonfinite_both > 0) out.push_back({"nonfinite_both", static_cast<double>(m.nonfinite_both), 0});
  // NaN never passes a comparison, so "!(x <= bound)" also catches a NaN metric.
  if (bound.nmse && !(m.nmse <= *bound.nmse)) out.push_back({"nmse", m.nmse, *bound.nmse});
  if (bound.max_abs && !(m.max_abs <= *bound.max_abs)) out.push_back({"max_abs", m.max_abs, *bound.max_abs});
  if (bound.max_rel && !(m.max_rel <= *bound.max_rel)) out.push_back({"max_rel", m.max_rel, *bound.max_rel});
  if (bound.min_cosine && !(m.cosine >= *bound.min_cosine)) out.push_back({"cosine", m.cosine, *bound.min_cosine});
  return out;
}

std::string describe(const Bound& bound) {
  std::string out;
  auto add = [&](const char* name, const char* op, const std::optional<double>& v) {
    if (v) out += fmt::format("{}{} {} {}", out.empty() ? "" : ", ", name, op, short_number(*v));
  };
  add("nmse", "<=", bound.nmse);
  add("max_abs", "<=", bound.max_abs);
  add("max_rel", "<=", bound.max_rel);
  add("cosine", ">=", bound.min_cosine);
  return out.empty() ? "unchecked" : out;
}

std::optional<LayerRange> parse_layer_range(std::string_view text) {
  auto number = [](std::string_view s) -> std::optional<int> {
    int v = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || error != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
  };
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    const auto v = number(text);
    return v ? std::optional<LayerRange>({*v, *v}) : std::nullopt;
  }
  const auto first = number(text.substr(0, dash));
  if (!first) return std::nullopt;
  const std::string_view rest = text.substr(dash + 1);
  if (rest.empty()) return LayerRange{*first, LayerRange::kOpen};
  const auto last = number(rest);
  if (!last || *last < *first) return std::nullopt;
  return LayerRange{*first, *last};
}

Bound calibrated_bound(const Metrics& floor, const Calibration& calibration) {
  Bound b;
  b.nmse = calibration.k * std::max(floor.nmse, calibration.min_floor_nmse);
  return b;
}

Bound Tolerances::builtin_bound(model::Precision precision) {
  Bound b;
  b.nmse = model::builtin_nmse(precision);
  return b;
}

const Tolerances::Rule* Tolerances::best_rule(const model::TensorId& id, model::Precision precision) const {
  const Rule* best = nullptr;
  std::tuple<bool, bool, bool, bool> best_rank{};
  for (const Rule& r : rules_) {
    if (r.op && *r.op != id.op) continue;
    if (r.cls && *r.cls != model::op_class(id.op)) continue;
    if (r.layers && !r.layers->contains(id.layer)) continue;
    if (r.dtype && *r.dtype != precision) continue;
    // Most specific first: op, then layers, then class, then dtype; a later rule wins a tie.
    const std::tuple<bool, bool, bool, bool> rank{r.op.has_value(), r.layers.has_value(), r.cls.has_value(),
                                                  r.dtype.has_value()};
    if (best == nullptr || rank >= best_rank) best = &r, best_rank = rank;
  }
  return best;
}

Tolerance Tolerances::lookup(const model::TensorId& id, model::Precision precision,
                             std::optional<model::Precision> builtin) const {
  // Another expert id is another expert, another kept position another key, whatever the
  // precision: choices compare exactly.
  if (model::is_choice(id.op))
    return {Bound{.nmse = {}, .max_abs = 0.0, .max_rel = {}, .min_cosine = {}},
            id.op == model::Op::moe_ids ? "expert ids: exact" : "kept positions: exact"};
  if (calibration_) {
    const auto floor = floors_.find({id.layer, id.op});
    if (floor != floors_.end())
      return {calibrated_bound(floor->second, *calibration_),
              fmt::format("calibrated: {} x max(floor {}, {})", short_number(calibration_->k),
                          short_number(floor->second.nmse), short_number(calibration_->min_floor_nmse))};
  }
  if (const Rule* rule = best_rule(id, precision)) return rule->tolerance;
  if (const auto op = ops_.find(id.op); op != ops_.end()) return op->second;
  if (const auto cls = classes_.find(model::op_class(id.op)); cls != classes_.end()) return cls->second;
  if (default_) return *default_;
  const model::Precision fallback = builtin.value_or(precision);
  return {builtin_bound(fallback), fmt::format("built-in {} default", model::precision_name(fallback))};
}

void Tolerances::set_floor(const model::TensorId& id, const Metrics& floor) { floors_[{id.layer, id.op}] = floor; }

bool Tolerances::has_floor(const model::TensorId& id) const { return floors_.count({id.layer, id.op}) > 0; }

Tolerances Tolerances::calibrated(const std::vector<std::pair<model::TensorId, Metrics>>& floors,
                                  const Calibration& calibration) {
  Tolerances t;
  t.set_calibration(calibration);
  for (const auto& [id, m] : floors) t.set_floor(id, m);
  return t;
}

// --- TOML ----------------------------------------------------------------------------------------

// Turns a parsed TOML document into Tolerances, failing on anything it does not know.
class TomlLoader {
 public:
  explicit TomlLoader(std::string source) : source_(std::move(source)) {}

  Tolerances load(const toml::table& root) {
    Tolerances t;
    t.source_ = source_;
    for (auto&& [key, node] : root) {
      const std::string name(key.str());
      if (name == "default") {
        t.default_ = entry(node, "[default]", "default");
      } else if (name == "class") {
        for (auto&& [k, v] : table_of(node, "class")) {
          const auto cls = model::op_class_from_name(k.str());
          if (!cls)
            fail(k.source(), "class." + std::string(k.str()), class_names(), fmt::format("the class '{}'", k.str()));
          t.classes_[*cls] = entry(v, fmt::format("[class.{}]", k.str()), "class." + std::string(k.str()));
        }
      } else if (name == "op") {
        for (auto&& [k, v] : table_of(node, "op")) {
          const auto op = model::op_from_name(k.str());
          if (!op) fail(k.source(), "op." + std::string(k.str()), op_names(), fmt::format("the op '{}'", k.str()));
          t.ops_[*op] = entry(v, fmt::format("[op.{}]", k.str()), "op." + std::string(k.str()));
        }
      } else if (name == "rule") {
        read_rules(node, t.rules_);
      } else {
        fail(key.source(), name, "one of the tables default, class, op or the array rule",
             fmt::format("the unknown key '{}'", name));
      }
    }
    return t;
  }

 private:
  static std::string class_names() {
    std::string out = "one of";
    for (int i = 0; i < model::kOpClassCount; ++i)
      out += fmt::format("{} {}", i > 0 ? "," : "", model::op_class_name(static_cast<model::OpClass>(i)));
    return out;
  }
  static std::string op_names() {
    std::string out = "one of";
    for (model::Op op : model::kAllOps)
      out += fmt::format("{} {}", op != model::kAllOps[0] ? "," : "", model::op_name(op));
    return out;
  }

  static std::string found(const toml::node& node) {
    if (const auto* s = node.as_string()) return fmt::format("the string \"{}\"", s->get());
    if (const auto* i = node.as_integer()) return fmt::format("the integer {}", i->get());
    if (const auto* f = node.as_floating_point()) return fmt::format("the number {}", f->get());
    if (const auto* b = node.as_boolean()) return fmt::format("the boolean {}", b->get());
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    return "another kind of value";
  }

  [[noreturn]] void fail(const toml::source_region& where, const std::string& key, const std::string& expected,
                         const std::string& what) const {
    throw FormatError(fmt::format("{}:{}:{}: {}: expected {}, found {}", source_, where.begin.line, where.begin.column,
                                  key, expected, what));
  }

  const toml::table& table_of(const toml::node& node, const std::string& key) const {
    if (const auto* t = node.as_table()) return *t;
    fail(node.source(), key, "a table", found(node));
  }

  // A table of metric bounds, plus the selector keys `allowed` (those the caller reads itself).
  Tolerance entry(const toml::node& node, const std::string& label, const std::string& key,
                  std::initializer_list<std::string_view> allowed = {}) const {
    const toml::table& t = table_of(node, key);
    Tolerance tol;
    tol.source = fmt::format("{}:{} {}", source_, t.source().begin.line, label);
    for (auto&& [k, v] : t) {
      const std::string name(k.str()), path = key + "." + name;
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
      std::optional<double>* slot = name == "nmse"         ? &tol.bound.nmse
                                    : name == "max_abs"    ? &tol.bound.max_abs
                                    : name == "max_rel"    ? &tol.bound.max_rel
                                    : name == "min_cosine" ? &tol.bound.min_cosine
                                                           : nullptr;
      if (slot == nullptr)
        fail(k.source(), path,
             allowed.size() > 0
                 ? "a metric (nmse, max_abs, max_rel, min_cosine) or a selector (layers, op, class, dtype)"
                 : "a metric: nmse, max_abs, max_rel or min_cosine",
             fmt::format("the unknown key '{}'", name));
      const std::optional<double> value = v.is_number() ? v.value<double>() : std::nullopt;
      const bool cosine = name == "min_cosine";
      if (!value || !std::isfinite(*value) || (cosine ? std::abs(*value) > 1 : *value < 0))
        fail(v.source(), path, cosine ? "a number in [-1, 1]" : "a finite number >= 0", found(v));
      *slot = *value;
    }
    return tol;
  }

  std::string string_of(const toml::node& node, const std::string& key) const {
    if (const auto* s = node.as_string()) return s->get();
    fail(node.source(), key, "a string", found(node));
  }

  Tolerances::Rule rule(const toml::table& t, std::size_t index) const {
    const std::string key = fmt::format("rule #{}", index + 1);
    Tolerances::Rule r;
    r.tolerance = entry(t, fmt::format("[[rule]] #{}", index + 1), key, {"layers", "op", "class", "dtype"});
    if (const toml::node* n = t.get("op")) {
      r.op = model::op_from_name(string_of(*n, key + ".op"));
      if (!r.op) fail(n->source(), key + ".op", op_names(), found(*n));
    }
    if (const toml::node* n = t.get("class")) {
      r.cls = model::op_class_from_name(string_of(*n, key + ".class"));
      if (!r.cls) fail(n->source(), key + ".class", class_names(), found(*n));
      if (r.op && model::op_class(*r.op) != *r.cls)
        fail(n->source(), key + ".class", fmt::format("the class of op {}", model::op_name(*r.op)), found(*n));
    }
    if (const toml::node* n = t.get("layers")) {
      const std::string text =
          n->is_integer() ? std::to_string(n->value<std::int64_t>().value_or(-1)) : string_of(*n, key + ".layers");
      r.layers = parse_layer_range(text);
      if (!r.layers) fail(n->source(), key + ".layers", "a layer range \"5\", \"0-3\" or \"10-\"", found(*n));
    }
    if (const toml::node* n = t.get("dtype")) {
      r.dtype = model::parse_precision(string_of(*n, key + ".dtype"));
      if (!r.dtype) fail(n->source(), key + ".dtype", "one of " + model::precision_names(), found(*n));
    }
    return r;
  }

  void read_rules(const toml::node& node, std::vector<Tolerances::Rule>& rules) const {
    const auto* array = node.as_array();
    if (array == nullptr) fail(node.source(), "rule", "an array of tables ([[rule]])", found(node));
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = *array->get(i);
      rules.push_back(rule(table_of(item, fmt::format("rule #{}", i + 1)), i));
    }
  }

  std::string source_;
};

namespace {

// The offset of the first byte of text that is not ASCII and not inside a comment, or npos.

}  // namespace

Tolerances Tolerances::from_toml(std::string_view text, const std::string& source) {
  model::check_toml_text(text, source);
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw FormatError(fmt::format("{}:{}:{}: expected valid TOML, found an error: {}", source, e.source().begin.line,
                                  e.source().begin.column, e.description()));
  }
  return TomlLoader(source).load(root);
}

Tolerances Tolerances::from_file(const std::string& path) {
  return from_toml(model::read_regular_file(path, "tolerance file"), path);
}

}  // namespace tapdiff::bisect
