// Tolerances: the TOML file (tables, rules, precedence, layer ranges, dtypes), the built-in
// defaults, calibrated bounds, and errors that name the file, the line and the key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "bisect/compare/tolerances.h"
#include "model/errors.h"
#include "model/precision.h"
#include "tests/test_support.h"

namespace tapdiff::bisect {
namespace {

using model::Op;
using P = model::Precision;
using model::TensorId;

// The repository root: this file is tests/test_tolerances.cpp.
const std::string kSourceDir = std::filesystem::path(__FILE__).parent_path().parent_path().string();

std::string error_of(const std::string& toml, const std::string& source = "tol.toml") {
  try {
    Tolerances::from_toml(toml, source);
  } catch (const FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a FormatError for:\n" << toml;
  return {};
}

// A file using every level, so each lookup below shows which level wins.
constexpr const char* kLevels = R"(
[default]
nmse = 1e-9

[class.rope]
nmse = 1e-7

[op.rope_q]
nmse = 1e-6
max_rel = 0.01

[[rule]]            # 1: class and layers
class = "rope"
layers = "2-3"
nmse = 1e-5

[[rule]]            # 2: op only
op = "rope_q"
nmse = 1e-4

[[rule]]            # 3: op and layers
op = "rope_q"
layers = "3"
nmse = 1e-3

[[rule]]            # 4: layers only, f16 runs only
layers = "10-"
dtype = "f16"
min_cosine = 0.99
)";

TEST(Tolerances, BuiltinDefaultsDependOnTheComputeDtype) {
  const Tolerances t;
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::f32).bound.nmse, 1e-8);
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::f64).bound.nmse, 1e-8);
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::f16).bound.nmse, 1e-4);
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::bf16).bound.nmse, 1e-3);
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::llama_cpp).bound.nmse, 1e-3);
  EXPECT_FALSE(t.lookup({Op::q_proj, 0}, P::f32).bound.max_abs.has_value());
  EXPECT_EQ(t.lookup({Op::logits, 4}, P::f16).source, "built-in f16 default");
}

TEST(Tolerances, BuiltinDefaultsFollowTheCoarsestDtypeOfTheComparison) {
  using model::coarsest;
  EXPECT_EQ(coarsest({P::f64, P::f32, P::f64, P::f64}), P::f32);
  EXPECT_EQ(coarsest({P::f32, P::f32, P::f32, P::f16}), P::f16);  // a dump stored as f16
  EXPECT_EQ(coarsest({P::bf16, P::f16}), P::bf16);
  EXPECT_EQ(coarsest({P::f64}), P::f64);
  EXPECT_EQ(coarsest({}), P::f32);
  // Rules match B's compute dtype; only the built-in fallback uses the coarsest one.
  const Tolerances t = Tolerances::from_toml("[[rule]]\ndtype = \"f32\"\nop = \"attn\"\nnmse = 0.5\n", "r.toml");
  EXPECT_EQ(t.lookup({Op::attn, 0}, P::f32, P::f16).bound.nmse, 0.5);
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::f32, P::f16).bound.nmse, 1e-4);
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::f32, P::f16).source, "built-in f16 default");
}

TEST(Tolerances, MostSpecificEntryWinsInTheDocumentedOrder) {
  const Tolerances t = Tolerances::from_toml(kLevels, "levels.toml");
  // default < class < op table < rule class+layers < rule op < rule op+layers
  EXPECT_EQ(t.lookup({Op::ffn_up, 0}, P::f32).bound.nmse, 1e-9);
  EXPECT_EQ(t.lookup({Op::rope_k, 0}, P::f32).bound.nmse, 1e-7);
  EXPECT_EQ(t.lookup({Op::rope_k, 2}, P::f32).bound.nmse, 1e-5);  // rule 1 beats [class.rope]
  EXPECT_EQ(t.lookup({Op::rope_q, 0}, P::f32).bound.nmse, 1e-4);  // rule 2 beats [op.rope_q]
  EXPECT_EQ(t.lookup({Op::rope_q, 2}, P::f32).bound.nmse, 1e-4);  // rule 2 (op) beats rule 1 (class+layers)
  EXPECT_EQ(t.lookup({Op::rope_q, 3}, P::f32).bound.nmse, 1e-3);  // rule 3 (op+layers) beats rule 2
  EXPECT_EQ(t.lookup({Op::rope_q, 3}, P::f32).source, "levels.toml:21 [[rule]] #3");
  EXPECT_EQ(t.lookup({Op::rope_k, 0}, P::f32).source, "levels.toml:5 [class.rope]");
}

TEST(Tolerances, TheEntryFoundIsUsedWhole) {
  const Tolerances t = Tolerances::from_toml(kLevels, "levels.toml");
  // [op.rope_q] sets max_rel, but rule 2 wins for rope_q and leaves max_rel unchecked.
  const Bound b = t.lookup({Op::rope_q, 0}, P::f32).bound;
  EXPECT_EQ(b.nmse, 1e-4);
  EXPECT_FALSE(b.max_rel.has_value());
  // Without rules, [op.rope_q] applies with both of its bounds.
  const Tolerances only_op = Tolerances::from_toml("[op.rope_q]\nnmse = 1e-6\nmax_rel = 0.01\n", "x.toml");
  EXPECT_EQ(only_op.lookup({Op::rope_q, 1}, P::f32).bound, (Bound{1e-6, std::nullopt, 0.01, std::nullopt}));
  // A file without [default] falls back to the built-in default of the dtype.
  EXPECT_EQ(only_op.lookup({Op::attn, 1}, P::f16).bound.nmse, 1e-4);
}

TEST(Tolerances, DtypeRulesMatchOnlyThatDtype) {
  const Tolerances t = Tolerances::from_toml(kLevels, "levels.toml");
  EXPECT_EQ(t.lookup({Op::ffn_up, 12}, P::f16).bound, (Bound{std::nullopt, std::nullopt, std::nullopt, 0.99}));
  EXPECT_EQ(t.lookup({Op::ffn_up, 12}, P::f32).bound.nmse, 1e-9);  // [default]
  EXPECT_EQ(t.lookup({Op::ffn_up, 9}, P::f16).bound.nmse, 1e-9);   // below the range
  // Same selectors, with and without dtype: the dtype rule is more specific; a later rule wins a tie.
  const Tolerances d = Tolerances::from_toml(R"(
[[rule]]
op = "attn"
dtype = "f16"
nmse = 1e-3
[[rule]]
op = "attn"
nmse = 1e-6
[[rule]]
op = "attn"
nmse = 1e-7
)",
                                             "d.toml");
  EXPECT_EQ(d.lookup({Op::attn, 0}, P::f16).bound.nmse, 1e-3);
  EXPECT_EQ(d.lookup({Op::attn, 0}, P::f32).bound.nmse, 1e-7);
}

TEST(Tolerances, LayerRanges) {
  EXPECT_EQ(parse_layer_range("5")->first, 5);
  EXPECT_EQ(parse_layer_range("5")->last, 5);
  EXPECT_EQ(parse_layer_range("0-3")->last, 3);
  EXPECT_TRUE(parse_layer_range("10-")->contains(1000));
  EXPECT_FALSE(parse_layer_range("10-")->contains(9));
  EXPECT_FALSE(parse_layer_range("0-3")->contains(-1));  // embed is never in a range
  for (const char* bad : {"", "-", "3-1", "-2", "a", "1-b", "1 - 3", "1-2-3", "+1"})
    EXPECT_FALSE(parse_layer_range(bad).has_value()) << bad;
  // An integer works as a one-layer range in the file.
  const Tolerances t = Tolerances::from_toml("[[rule]]\nlayers = 2\nnmse = 0.5\n", "i.toml");
  EXPECT_EQ(t.lookup({Op::attn, 2}, P::f32).bound.nmse, 0.5);
  EXPECT_EQ(t.lookup({Op::attn, 3}, P::f32).bound.nmse, 1e-8);
}

TEST(Tolerances, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(
      error_of("[op.rope_x]\nnmse = 1\n"),
      "tol.toml:1:5: op.rope_x: expected one of embed, attn_norm, q_a_proj, q_a_norm, q_proj, kv_a_proj, kv_a_norm, "
      "k_proj, v_proj, q_norm, k_norm, v_norm, rope_q, "
      "rope_k, idx_q_proj, idx_k_proj, idx_k_norm, idx_rope_q, idx_rope_k, idx_weights, idx_scores, idx_ids, "
      "attn, o_proj, attn_post_norm, attn_residual, ffn_norm, moe_router_norm, moe_router, moe_scores, "
      "moe_ids, moe_weights, moe_norm, moe_out, moe_post_norm, moe_shared, moe_sum, ffn_gate, ffn_up, ffn_act, "
      "ffn_down, dense_post_norm, ffn_sum, ffn_post_norm, ffn_residual, ple_input, "
      "ple_gate, ple_act, ple_proj, ple_norm, ple_residual, final_norm, "
      "logits, found the op 'rope_x'");
  EXPECT_EQ(error_of("[class.gemv]\nnmse = 1\n"),
            "tol.toml:1:8: class.gemv: expected one of embedding, norm, gemm, rope, attention, residual, activation, "
            "routing, experts, found the class 'gemv'");
  EXPECT_EQ(error_of("\n[default]\nnmse = -1e-3\n"),
            "tol.toml:3:8: default.nmse: expected a finite number >= 0, found the number -0.001");
  EXPECT_EQ(error_of("[default]\nnmse = \"small\"\n"),
            "tol.toml:2:8: default.nmse: expected a finite number >= 0, found the string \"small\"");
  EXPECT_EQ(error_of("[default]\nmin_cosine = 1.5\n"),
            "tol.toml:2:14: default.min_cosine: expected a number in [-1, 1], found the number 1.5");
  EXPECT_EQ(error_of("[default]\nnmsee = 1e-3\n"),
            "tol.toml:2:1: default.nmsee: expected a metric: nmse, max_abs, max_rel or min_cosine, found the unknown "
            "key 'nmsee'");
  EXPECT_EQ(error_of("[defaults]\nnmse = 1\n"),
            "tol.toml:1:2: defaults: expected one of the tables default, class, op or the array rule, found the "
            "unknown key 'defaults'");
  EXPECT_EQ(
      error_of("[[rule]]\nnmse = 1\n[[rule]]\nlayers = \"4-2\"\n"),
      "tol.toml:4:10: rule #2.layers: expected a layer range \"5\", \"0-3\" or \"10-\", found the string \"4-2\"");
  EXPECT_EQ(error_of("[[rule]]\ndtype = \"fp16\"\n"),
            "tol.toml:2:9: rule #1.dtype: expected one of " + model::precision_names() + ", found the string \"fp16\"");
  EXPECT_EQ(error_of("[[rule]]\nop = \"attn\"\nclass = \"gemm\"\n"),
            "tol.toml:3:9: rule #1.class: expected the class of op attn, found the string \"gemm\"");
  EXPECT_EQ(error_of("[[rule]]\nheads = 3\n"),
            "tol.toml:2:1: rule #1.heads: expected a metric (nmse, max_abs, max_rel, min_cosine) or a selector "
            "(layers, op, class, dtype), found the unknown key 'heads'");
  EXPECT_EQ(error_of("[rule]\nnmse = 1\n"),
            "tol.toml:1:1: rule: expected an array of tables ([[rule]]), found a table");
  EXPECT_NE(error_of("[default\nnmse = 1\n").find("tol.toml:1:9: expected valid TOML"), std::string::npos);
}

// toml++ 3.3 has undefined behaviour on some non-ASCII characters (tomlplusplus#295): the loader
// refuses them outside comments before parsing. Found by tests/fuzz (fuzz_toml_tolerances).
TEST(Tolerances, NonAsciiOutsideCommentsIsRefusedBeforeParsing) {
  EXPECT_EQ(error_of("[op.logits]\nnmse = \xD0\x94-7\n"),
            "tol.toml:2:8: expected ASCII outside comments, found the byte 0xd0");
  EXPECT_EQ(error_of("[[rule]]\nop = \"#\" \xC3\xA9\n"),
            "tol.toml:2:10: expected ASCII outside comments, found the byte 0xc3");
  EXPECT_EQ(error_of("s = \"\"\"\\\n\xC2\xA7\"\"\"\n"),
            "tol.toml:2:1: expected ASCII outside comments, found the byte 0xc2");
  const Tolerances t = Tolerances::from_toml("# tol\xC3\xA9rance\n[default] # \xD0\x94 '\"\nnmse = 1e-7\n", "tol.toml");
  ASSERT_TRUE(t.default_entry());
  EXPECT_EQ(t.default_entry()->bound.nmse, 1e-7);
}

// toml++ recurses once per part of a dotted key or header: 30,000 parts (an 80 KB file) overflowed
// the stack. The pre-scan refuses more than 64, where the file says; quoted dots are no parts.
TEST(Tolerances, KeysOfTooManyPartsAreRefusedBeforeParsing) {
  std::string parts;
  for (int i = 0; i < 30000; ++i) parts += ".a";
  EXPECT_EQ(error_of("# x\n[op.logits]\nnmse = 1e-7\n\n  a" + parts + " = 1\n"),
            "tol.toml:5:3: expected a TOML key of at most 64 parts, found more");
  EXPECT_EQ(error_of("[[rule" + parts + "]]\n"), "tol.toml:1:3: expected a TOML key of at most 64 parts, found more");
  EXPECT_EQ(error_of("[a" + parts.substr(0, 128) + "]\n"),
            "tol.toml:1:2: expected a TOML key of at most 64 parts, found more");
  // 64 parts, and any number inside quotes, pass the scan (and are then refused as unknown keys).
  EXPECT_EQ(error_of("[a" + parts.substr(0, 126) + "]\n").find("parts"), std::string::npos);
  EXPECT_EQ(error_of("[op.\"" + parts + "\"]\nnmse = 1e-7\n").find("parts"), std::string::npos);
}

TEST(Tolerances, MissingFileIsAUsageErrorNamingIt) {
  try {
    Tolerances::from_file("/nonexistent/tol.toml");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "tolerance file /nonexistent/tol.toml: expected a regular file, found no such file");
  }
  const auto dir = testing::temp_dir("tol");
  std::ofstream(dir / "t.toml") << "[op.attn]\nmax_abs = 0.25\n";
  const Tolerances t = Tolerances::from_file((dir / "t.toml").string());
  EXPECT_EQ(t.lookup({Op::attn, 0}, P::f32).bound.max_abs, 0.25);
  EXPECT_EQ(t.source(), (dir / "t.toml").string());
}

TEST(Tolerances, CheckReportsEachBrokenBound) {
  Metrics m;
  m.nmse = 2.1e-3, m.max_abs = 0.5, m.max_rel = 0.01, m.cosine = 0.98;
  const Bound b{1e-8, 1.0, 0.001, 0.999};
  const std::vector<Violation> v = check(b, m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].text(), "nmse 0.0021 > 1e-8");
  EXPECT_EQ(v[1].text(), "max_rel 0.01 > 0.001");
  EXPECT_EQ(v[2].text(), "cosine 0.98 < 0.999");
  EXPECT_TRUE(check(Bound{}, m).empty());  // nothing bounded: within
  m.nonfinite = 3;                         // non-finite mismatches fail whatever the bounds
  ASSERT_EQ(check(Bound{}, m).size(), 1u);
  EXPECT_EQ(check(Bound{}, m)[0].text(), "3 NaN/Inf elements where the runs disagree");
  Metrics nan_nmse;
  nan_nmse.nmse = NAN;
  EXPECT_EQ(check(Bound{1.0, {}, {}, {}}, nan_nmse).size(), 1u);
  EXPECT_EQ(describe(b), "nmse <= 1e-8, max_abs <= 1, max_rel <= 0.001, cosine >= 0.999");
}

TEST(Tolerances, CalibratedBoundIsKTimesTheFloorAboveAMinimum) {
  Metrics floor;
  floor.nmse = 3e-13;
  EXPECT_DOUBLE_EQ(*calibrated_bound(floor, {100, 1e-14}).nmse, 3e-11);
  floor.nmse = 0;  // an exact op (embed): the minimum floor applies
  EXPECT_DOUBLE_EQ(*calibrated_bound(floor, {100, 1e-14}).nmse, 1e-12);

  Metrics q_floor;
  q_floor.nmse = 2e-12;
  Tolerances t = Tolerances::calibrated({{TensorId{Op::q_proj, 1}, q_floor}}, {10, 1e-14});
  EXPECT_DOUBLE_EQ(*t.lookup({Op::q_proj, 1}, P::f32).bound.nmse, 2e-11);
  EXPECT_EQ(t.lookup({Op::q_proj, 1}, P::f32).source, "calibrated: 10 x max(floor 2e-12, 1e-14)");
  EXPECT_EQ(t.lookup({Op::q_proj, 0}, P::f32).bound.nmse, 1e-8);  // no floor: the table lookup
  // Floors arrive live, and override the file's entries for that tensor only.
  Tolerances file = Tolerances::from_toml("[op.q_proj]\nnmse = 1e-5\n", "f.toml");
  file.set_calibration({100, 1e-14});
  file.set_floor({Op::q_proj, 0}, q_floor);
  EXPECT_TRUE(file.has_floor({Op::q_proj, 0}));
  EXPECT_DOUBLE_EQ(*file.lookup({Op::q_proj, 0}, P::f32).bound.nmse, 2e-10);
  EXPECT_EQ(file.lookup({Op::q_proj, 1}, P::f32).bound.nmse, 1e-5);
}

TEST(Tolerances, ExampleFileParses) {
  const Tolerances t = Tolerances::from_file(kSourceDir + "/examples/tolerances.toml");
  EXPECT_FALSE(t.rules().empty());
  EXPECT_TRUE(t.default_entry().has_value());
}

}  // namespace
}  // namespace tapdiff::bisect
