// `tapdiff compare` as a user runs it: exit codes, the terminal verdict, the JSON contract, JUnit
// XML and the self-contained HTML report.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "dumps/dump_reader.h"
#include "dumps/h5.h"
#include "dumps/schema.h"
#include "model/precision.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Tags nest and close properly, attribute values are quoted, no raw '<' or '&' in text: enough of
// XML well-formedness to catch an unescaped message.
bool well_formed(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    std::string tag = xml.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos || count(tag, "\"") % 2 != 0) return false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag[0] != '?' && tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    const std::size_t next = xml.find('<', end);
    const std::string text = xml.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1);
    for (std::size_t amp = text.find('&'); amp != std::string::npos; amp = text.find('&', amp + 1))
      if (text.find(';', amp) == std::string::npos) return false;
    i = end;
  }
  return open.empty();
}

// A golden dump of synth:tiny (48 prompt tokens in chunks of 16, 3 generated) and a copy.
struct Dumps {
  std::filesystem::path dir, a, b;
  explicit Dumps(const std::string& name) : dir(temp_dir(name)), a(dir / "a.h5"), b(dir / "b.h5") {
    const auto r = run_tapdiff("run --model " + quoted(synth_model_path("tiny")) + " --tokens " + prompt_tokens() +
                               " --chunk 16 --generate 3 --dump " + quoted(a));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::filesystem::copy_file(a, b);
  }
  // Adds delta to one element of B's layer/op at (row, col).
  void corrupt(const std::string& tap, std::int64_t row, std::int64_t col, float delta) const {
    const dumps::h5::File file = dumps::h5::File::open(b.string(), dumps::h5::File::Mode::write);
    const dumps::h5::DataSet data = file.open_dataset("taps/" + tap);
    std::vector<float> values(data.extent()[1]);
    const hid_t f32 = dumps::h5::memory_type(dumps::h5::Type::f32);
    data.read_rows(static_cast<hsize_t>(row), 1, f32, values.data());
    values[static_cast<std::size_t>(col)] += delta;
    data.write_rows(static_cast<hsize_t>(row), 1, f32, values.data());
  }
  // Overwrites every row of B's tap LAYER/OP with values (f32, [rows, width]).
  void set_tap(const std::string& tap, const model::HostTensor& values) const {
    const dumps::h5::File file = dumps::h5::File::open(b.string(), dumps::h5::File::Mode::write);
    file.open_dataset("taps/" + tap)
        .write_rows(0, static_cast<hsize_t>(values.rows()), dumps::h5::memory_type(dumps::h5::Type::f32),
                    values.f32().data());
  }
  // Writes B's recorded positions of rows [first, first + values.size()).
  void set_positions(std::int64_t first, const std::vector<std::int32_t>& values) const {
    const dumps::h5::File file = dumps::h5::File::open(b.string(), dumps::h5::File::Mode::write);
    file.open_group("rows")
        .open_dataset("position")
        .write_rows(static_cast<hsize_t>(first), values.size(), dumps::h5::memory_type(dumps::h5::Type::i32),
                    values.data());
  }
  // Replaces B by a run of the same tokens with these options.
  void replace_b(const std::string& options) const {
    const auto r = run_tapdiff("run --model " + quoted(synth_model_path("tiny")) + " --tokens " + prompt_tokens() +
                               " --chunk 16 " + options + " --dump " + quoted(b));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // Replaces B by engine B's run of the same tokens: the Vulkan engine with these options.
  void run_b(const std::string& options) const { replace_b("--generate 3 --engine vulkan " + options); }
  static std::string prompt_tokens() {
    std::string tokens;
    for (int i = 0; i < 48; ++i) tokens += (i > 0 ? "," : "") + std::to_string(1 + (i * 37) % 500);
    return tokens;
  }
  CommandResult compare(const std::string& options = "") const {
    return run_tapdiff("compare " + quoted(a) + " " + quoted(b) + " " + options);
  }
};

TEST(CompareCli, IdenticalDumpsMatchWithExitCode0) {
  const Dumps d("same");
  const auto r = d.compare("--json " + quoted(d.dir / "r.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("match: 33 ops within tolerance over 50 positions\n", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\033'), std::string::npos) << "colour on a pipe";
  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["verdict"], "match");
  EXPECT_TRUE(json["first"].is_null());
  EXPECT_TRUE(json["culprit"].is_null());
  EXPECT_TRUE(json["diagnosis"].is_array());
  EXPECT_TRUE(json["tokens"]["first_mismatch_step"].is_null());
  EXPECT_EQ(json["tokens"]["a"].size(), 3u);
  EXPECT_EQ(json["ops"].size(), 33u);
  EXPECT_EQ(json["ops"][0]["layer"], -1);
  EXPECT_EQ(json["ops"][0]["op"], "embed");
  EXPECT_EQ(json["ops"][32]["layer"], 2);  // logits: layer = n_layers
  EXPECT_EQ(json["ops"][32]["op"], "logits");
}

TEST(CompareCli, ACorruptedElementDivergesWithExitCode1AndTheJsonContract) {
  const Dumps d("corrupt");
  d.corrupt("1/rope_q", 37, 2 * 16 + 5, 0.5f);  // position 37, head 2, channel 5
  const auto r = d.compare("--json " + quoted(d.dir / "r.json") + " --junit " + quoted(d.dir / "r.xml") + " --html " +
                           quoted(d.dir / "r.html"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("diverged at layer 1 rope_q (rope): nmse ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("first at position 37 (chunk 2), worst at position 37 head 2 channel 5: "), std::string::npos)
      << r.output;

  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["verdict"], "diverged");
  const auto& first = json["first"];
  EXPECT_EQ(first["layer"], 1);
  EXPECT_EQ(first["op"], "rope_q");
  EXPECT_EQ(first["class"], "rope");
  EXPECT_EQ(first["position"], 37);
  EXPECT_EQ(first["chunk"], 2);
  EXPECT_GT(first["metrics"]["nmse"].get<double>(), 1e-8);
  EXPECT_EQ(first["worst"]["head"], 2);
  EXPECT_EQ(first["worst"]["channel"], 5);
  EXPECT_NEAR(first["worst"]["b"].get<double>() - first["worst"]["a"].get<double>(), 0.5, 1e-6);
  EXPECT_EQ(first["per_position"].size(), 50u);
  EXPECT_TRUE(json["culprit"].is_null());
  EXPECT_TRUE(json["culprit_note"].is_string());
  ASSERT_TRUE(json["diagnosis"].is_array());
  for (const auto& diagnosis : json["diagnosis"]) {
    EXPECT_TRUE(diagnosis["code"].is_string());
    EXPECT_TRUE(diagnosis["text"].is_string());
  }
  EXPECT_EQ(json["summary"]["failing"], 1);
  int failing = 0;
  for (const auto& op : json["ops"]) failing += op["pass"].get<bool>() ? 0 : 1;
  EXPECT_EQ(failing, 1);

  const std::string xml = slurp(d.dir / "r.xml");
  EXPECT_TRUE(well_formed(xml)) << xml;
  EXPECT_EQ(xml.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(xml, "<testsuite "), 1u);
  EXPECT_EQ(count(xml, "<testcase "), 33u);
  EXPECT_EQ(count(xml, "<failure "), 1u);
  EXPECT_NE(xml.find("tests=\"33\" failures=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("<testcase name=\"1/rope_q\" classname=\"tapdiff.rope\">\n      <failure message=\"nmse "),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find(" &gt; 1e-8\""), std::string::npos) << xml;

  const std::string html = slurp(d.dir / "r.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http"), std::string::npos) << "the report must not reach the network";
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_NE(html.find("<svg width="), std::string::npos);
  EXPECT_NE(html.find("class='heatmap'"), std::string::npos);
  EXPECT_NE(html.find("class='plot'"), std::string::npos);
  EXPECT_NE(html.find("diverged at layer 1 rope_q"), std::string::npos);
  EXPECT_EQ(count(html, "stroke='#000'"), 1u);  // one heatmap cell past tolerance
}

// An engine that restarts its positions at 0 in every prefill chunk after the first, and records
// the positions it used: no row is dropped, RoPE shows the error at the chunk start, and even with
// every value right the recorded positions alone fail the comparison.
TEST(CompareCli, PositionsRestartedByAChunkAreFoundNeverDropped) {
  const Dumps d("chunk-reset");
  d.run_b("--inject rope-chunk-reset@1");
  std::vector<std::int32_t> reset;
  for (int r = 16; r < 48; ++r) reset.push_back(r % 16);
  d.set_positions(16, reset);
  const auto r = d.compare("--json " + quoted(d.dir / "r.json") + " --junit " + quoted(d.dir / "r.xml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("diverged at layer 1 rope_q (rope): ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("problem  positions-anomaly: B's recorded positions fall at row 16 (position 0 after 15; "
                          "the token stream is at 16): 32 rows record another position than their place"),
            std::string::npos)
      << r.output;
  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["verdict"], "diverged");
  EXPECT_EQ(json["first"]["position"], 16);
  EXPECT_EQ(json["rows"]["compared"], 48);  // every prompt row; the generations part at the first decode step
  ASSERT_EQ(json["problems"].size(), 2u);
  EXPECT_EQ(json["problems"][0]["code"], "tokens-differ");
  EXPECT_EQ(json["problems"][1]["code"], "positions-anomaly");
  EXPECT_EQ(json["problems"][1]["evidence"]["rows_off"], 32);
  const std::string xml = slurp(d.dir / "r.xml");
  EXPECT_TRUE(well_formed(xml)) << xml;
  EXPECT_EQ(count(xml, "<testcase name=\"run/positions-anomaly\""), 1u) << xml;

  // The same recorded positions on values that are all right: still no match.
  std::filesystem::copy_file(d.a, d.b, std::filesystem::copy_options::overwrite_existing);
  d.set_positions(16, reset);
  const auto values_right = d.compare();
  EXPECT_EQ(values_right.exit_code, 1) << values_right.output;
  EXPECT_EQ(values_right.output.rfind("diverged: 33 ops within tolerance over 50 positions, but positions-anomaly\n"
                                      "problem  positions-anomaly: B's recorded positions fall at row 16",
                                      0),
            0u)
      << values_right.output;
}

// Generated tokens that differ fail the comparison even when every compared row is within tolerance.
TEST(CompareCli, GeneratedTokensThatDifferNeverExit0) {
  const Dumps d("tokens-differ");
  {
    const dumps::h5::File file = dumps::h5::File::open(d.b.string(), dumps::h5::File::Mode::write);
    auto summary = nlohmann::json::parse(file.get_string("summary"));
    summary["generated"][2] = summary["generated"][2].get<int>() + 1;  // the last token: fed to no row
    file.set_string("summary", summary.dump());
  }
  const auto r = d.compare("--json " + quoted(d.dir / "r.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("diverged: 33 ops within tolerance over 50 positions, but tokens-differ\n"
                           "problem  tokens-differ: the generated tokens differ from step 2: A ",
                           0),
            0u)
      << r.output;
  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["verdict"], "diverged");
  EXPECT_EQ(json["problems"][0]["code"], "tokens-differ");
  EXPECT_EQ(json["problems"][0]["evidence"]["step"], 2);
}

// Where the generated tokens part, the row whose logits chose them is judged: B's logits there
// within tolerance and ranking B's token first is a near tie (the rows fed other tokens after it
// go unjudged, no divergence); past tolerance, or B's own logits ranking A's token first, is not.
TEST(CompareCli, TokensThatPartAtANearTieAreNoDivergence) {
  const Dumps d("near-tie");
  const std::string logits_tap = "2/logits";  // synth tiny: 2 layers
  const std::int64_t decided = 47, fed = 48;  // the prompt's last row chose step 0, fed at position 48
  std::vector<float> row;
  {
    const dumps::h5::File file = dumps::h5::File::open(d.a.string(), dumps::h5::File::Mode::read);
    const dumps::h5::DataSet data = file.open_dataset("taps/" + logits_tap);
    row.resize(data.extent()[1]);
    data.read_rows(decided, 1, dumps::h5::memory_type(dumps::h5::Type::f32), row.data());
  }
  std::vector<std::size_t> order(row.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](auto i, auto j) { return row[i] > row[j]; });
  const auto a = static_cast<std::int32_t>(order[0]), b = static_cast<std::int32_t>(order[1]);
  const double margin = double(row[order[0]]) - double(row[order[1]]);
  // B chose its second token: its summary and the token it fed at the next position say so.
  const auto choose_b = [&] {
    const dumps::h5::File file = dumps::h5::File::open(d.b.string(), dumps::h5::File::Mode::write);
    auto summary = nlohmann::json::parse(file.get_string("summary"));
    summary["generated"][0] = b;
    file.set_string("summary", summary.dump());
    file.open_group("rows").open_dataset("token").write_rows(fed, 1, dumps::h5::memory_type(dumps::h5::Type::i32), &b);
  };
  const auto tolerances = d.dir / "loose-logits.toml";
  std::ofstream(tolerances) << "[op.logits]\nnmse = 1e-2\n";

  // B's own logits still rank A's token first: B did not choose by them.
  choose_b();
  const auto unexplained = d.compare("--tolerances " + quoted(tolerances) + " --json " + quoted(d.dir / "u.json"));
  EXPECT_EQ(unexplained.exit_code, 1) << unexplained.output;
  auto json = nlohmann::json::parse(slurp(d.dir / "u.json"));
  EXPECT_EQ(json["verdict"], "diverged");
  EXPECT_EQ(json["problems"][0]["code"], "tokens-differ");
  EXPECT_EQ(json["tokens"]["tie"]["b_logits_agree"], false);
  EXPECT_NE(unexplained.output.find("B did not choose its token by them"), std::string::npos) << unexplained.output;

  // B's logits swap the two: B chose by them, and the swap is within the loose logits tolerance.
  d.corrupt(logits_tap, decided, a, static_cast<float>(-margin - 1e-3));
  d.corrupt(logits_tap, decided, b, static_cast<float>(margin + 1e-3));
  const auto tie = d.compare("--tolerances " + quoted(tolerances) + " --json " + quoted(d.dir / "t.json"));
  EXPECT_EQ(tie.exit_code, 1) << tie.output;  // the rows after it went unjudged: no match either
  json = nlohmann::json::parse(slurp(d.dir / "t.json"));
  EXPECT_EQ(json["verdict"], "incomplete");
  ASSERT_EQ(json["problems"].size(), 1u) << json["problems"].dump();
  EXPECT_EQ(json["problems"][0]["code"], "near-tie");
  EXPECT_EQ(json["problems"][0]["evidence"]["rows_left_out"], 2);
  const auto& evidence = json["tokens"]["tie"];
  EXPECT_EQ(evidence["position"], decided);
  EXPECT_EQ(evidence["a"], a);
  EXPECT_EQ(evidence["b"], b);
  EXPECT_NEAR(evidence["margin"].get<double>(), margin, 1e-6);
  EXPECT_EQ(evidence["near_tie"], true);
  EXPECT_NE(tie.output.find(fmt::format("problem  near-tie: the generated tokens differ from step 0: A {}, B {} (A's "
                                        "logits at position 47 put {} above {} by ",
                                        a, b, a, b)),
            std::string::npos)
      << tie.output;

  // Under the default f32 tolerances the same swap is past tolerance: the runs differ.
  const auto past = d.compare("--json " + quoted(d.dir / "p.json"));
  EXPECT_EQ(past.exit_code, 1) << past.output;
  json = nlohmann::json::parse(slurp(d.dir / "p.json"));
  EXPECT_EQ(json["verdict"], "diverged");
  EXPECT_EQ(json["tokens"]["tie"]["within_tolerance"], false);
  EXPECT_NE(past.output.find("B's logits there are past tolerance"), std::string::npos) << past.output;
}

// --floor: a third run calibrates every op: B's error within k times the floor run's passes (the
// tolerance names its source), an error far past it is named, and --no-calibrate contradicts it.
TEST(CompareCli, AFloorRunInBsPrecisionCalibratesEveryOp) {
  const Dumps d("floor");  // A and B: the f32 reference
  const auto exact = d.dir / "exact.h5", floor = d.dir / "floor.h5";
  const std::string run = "run --model " + quoted(synth_model_path("tiny")) + " --tokens " + Dumps::prompt_tokens() +
                          " --chunk 16 --generate 3 --dump ";
  ASSERT_EQ(run_tapdiff(run + quoted(exact) + " --dtype f64").exit_code, 0);
  ASSERT_EQ(run_tapdiff(run + quoted(floor) + " --dtype f16").exit_code, 0);
  // B in f32 against the exact answer, held to 100 x the f16 run's error: within it.
  const auto b = [&](const std::string& options) {
    return run_tapdiff("compare " + quoted(exact) + " " + quoted(d.b) + " " + options);
  };
  const auto held = b("--floor " + quoted(floor) + " --json " + quoted(d.dir / "r.json"));
  EXPECT_EQ(held.exit_code, 0) << held.output;
  EXPECT_NE(held.output.find("tolerances calibrated against " + floor.string() + " (k = 100)"), std::string::npos)
      << held.output;
  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["first"], nullptr);
  EXPECT_EQ(json["ops"][3]["tolerance"]["source"].get<std::string>().rfind("calibrated: 100 x max(floor ", 0), 0u)
      << json["ops"][3].dump();
  // An error far past the f16 run's: named.
  d.corrupt("1/ffn_down", 20, 3, 2.0f);
  const auto wrong = b("--floor " + quoted(floor));
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_EQ(wrong.output.rfind("diverged at layer 1 ffn_down (gemm): ", 0), 0u) << wrong.output;
  // --b-precision alone says what B computes in: the built-in bound of that precision (B's
  // corruption above, nmse 1.5e-3, is past bf16's 1e-3 too).
  const auto alone = b("--b-precision bf16 --json " + quoted(d.dir / "alone.json"));
  EXPECT_EQ(alone.exit_code, 1) << alone.output;
  const auto given = nlohmann::json::parse(slurp(d.dir / "alone.json"))["tolerances"];
  EXPECT_EQ(given["dtype"], "bf16");
  EXPECT_EQ(given["dtype_from"], "given");
  EXPECT_EQ(given["builtin_dtype"], "bf16");
  const auto fp8 = b("--b-precision fp8");
  EXPECT_EQ(fp8.exit_code, 2) << fp8.output;
  EXPECT_NE(fp8.output.find("--b-precision fp8: expected one of " + model::precision_names()), std::string::npos)
      << fp8.output;
  // --floor calibrates: --no-calibrate with it is a contradiction.
  const auto both = b("--floor " + quoted(floor) + " --no-calibrate");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("--floor calibrates the tolerances"), std::string::npos) << both.output;
}

// --model with B's precision: the reference in that precision runs A's own passes beside the f64
// truth, and that noise floor calibrates the scan. A clean bf16 run matches; an error some 3x past
// k x its floor, which bf16's built-in bound (nmse 1e-3) lets pass, is named with its culprit.
TEST(CompareCli, BsPrecisionCalibratesTheScanFromANoiseFloorRunInProcess) {
  const Dumps d("precision-floor");
  const auto exact = d.dir / "exact.h5";
  const std::string model = quoted(synth_model_path("tiny"));
  const std::string run =
      "run --model " + model + " --tokens " + Dumps::prompt_tokens() + " --chunk 16 --generate 3 --dump ";
  ASSERT_EQ(run_tapdiff(run + quoted(exact) + " --dtype f64").exit_code, 0);
  std::filesystem::remove(d.b);
  ASSERT_EQ(run_tapdiff(run + quoted(d.b) + " --dtype bf16").exit_code, 0);
  const auto compare = [&](const std::string& options) {
    return run_tapdiff("compare " + quoted(exact) + " " + quoted(d.b) + " " + options);
  };
  const auto clean = compare("--model " + model + " --json " + quoted(d.dir / "clean.json"));
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_NE(clean.output.find("tolerances calibrated against ref bf16 on A's passes (k = 10) (B computes in bf16)"),
            std::string::npos)
      << clean.output;
  auto json = nlohmann::json::parse(slurp(d.dir / "clean.json"));
  EXPECT_EQ(json["tolerances"]["dtype_from"], "stated");
  double worst_share = 0;  // of its bound, over every op: the clean run's margin
  for (const auto& op : json["ops"]) {
    if (op["op"] == "moe_ids") continue;
    worst_share = std::max(worst_share, op["metrics"]["nmse"].get<double>() / op["tolerance"]["nmse"].get<double>());
  }
  EXPECT_LT(worst_share, 0.5) << "a clean bf16 run must pass with margin";
  // Every element of row 20 of 0/q_proj scaled by 1.15: nmse about 4.5e-4 over the op, where its
  // floor is about 1.3e-5.
  {
    const dumps::h5::File file = dumps::h5::File::open(d.b.string(), dumps::h5::File::Mode::write);
    const dumps::h5::DataSet data = file.open_dataset("taps/0/q_proj");
    std::vector<float> values(data.extent()[1]);
    const hid_t f32 = dumps::h5::memory_type(dumps::h5::Type::f32);
    data.read_rows(20, 1, f32, values.data());
    for (float& v : values) v *= 1.15f;
    data.write_rows(20, 1, f32, values.data());
  }
  const auto table = compare("--model " + model + " --no-calibrate");
  EXPECT_EQ(table.exit_code, 0) << "the built-in bf16 bound is blind to it:\n" << table.output;
  const auto named = compare("--model " + model + " --json " + quoted(d.dir / "named.json"));
  EXPECT_EQ(named.exit_code, 1) << named.output;
  EXPECT_EQ(named.output.rfind("diverged at layer 0 q_proj (gemm): ", 0), 0u) << named.output;
  json = nlohmann::json::parse(slurp(d.dir / "named.json"));
  EXPECT_EQ(json["culprit"]["layer"], 0) << json["culprit"].dump();
  EXPECT_EQ(json["culprit"]["op"], "q_proj") << json["culprit"].dump();
}

// Positions only A holds (B's run stopped early) are never passed over: the comparison is
// incomplete and says how many, unless --common-rows narrows it to the positions both hold.
TEST(CompareCli, PositionsOnlyInAFailUnlessCommonRowsNarrowsTheComparison) {
  const Dumps d("only-in-a");
  d.replace_b("--generate 1");
  const auto missing = d.compare("--json " + quoted(d.dir / "r.json"));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("problem  rows-only-in-a: A holds 2 positions that B does not"), std::string::npos)
      << missing.output;
  EXPECT_EQ(nlohmann::json::parse(slurp(d.dir / "r.json"))["verdict"], "incomplete");
  const auto narrowed = d.compare("--common-rows");
  EXPECT_EQ(narrowed.exit_code, 0) << narrowed.output;
  EXPECT_NE(narrowed.output.find("2 only in A (left out by --common-rows)"), std::string::npos) << narrowed.output;
}

// Ops only one dump taps are never passed over: the comparison is incomplete and names them,
// unless --common-ops narrows it to the ops both tap (or --taps selects those).
TEST(CompareCli, OpsOnlyOneDumpTapsFailUnlessCommonOpsNarrowsTheComparison) {
  const Dumps d("ops-only-in-a");
  d.replace_b("--generate 3 --taps '^[01]/'");
  const auto missing = d.compare("--json " + quoted(d.dir / "r.json"));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("problem  ops-only-in-a: A holds "), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("that B does not (-1/embed, "), std::string::npos) << missing.output;
  const nlohmann::json report = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(report["verdict"], "incomplete");
  EXPECT_EQ(report["problems"][0]["evidence"]["taps"], report["not_compared"]["only_in_a"].size());
  const auto narrowed = d.compare("--common-ops");
  EXPECT_EQ(narrowed.exit_code, 0) << narrowed.output;
  EXPECT_NE(narrowed.output.find("only in B (left out by --common-ops)"), std::string::npos) << narrowed.output;
  EXPECT_EQ(d.compare("--taps '^[01]/'").exit_code, 0);
  const auto reversed = run_tapdiff("compare " + quoted(d.b) + " " + quoted(d.a));
  EXPECT_EQ(reversed.exit_code, 1) << reversed.output;
  EXPECT_NE(reversed.output.find("problem  ops-only-in-b: B holds "), std::string::npos) << reversed.output;
}

// A dump's model_config written to the documented minimum (block, rope_scaling, rotary_dim left
// out) is the model's config by what it means: --model takes it and names the culprit; a key that
// says otherwise (a bias the model lacks, another rotary width) is still refused by name.
TEST(CompareCli, AModelConfigIsComparedByWhatItMeans) {
  const Dumps d("minimal-config");
  d.corrupt("1/v_proj", 30, 2, 3.0f);
  const auto rewrite = [&](const nlohmann::json& config) {
    dumps::h5::File::open(d.b.string(), dumps::h5::File::Mode::write).set_string("model_config", config.dump());
  };
  const nlohmann::json full = nlohmann::json::parse(dumps::DumpReader(d.a.string()).metadata().model_config.dump());
  nlohmann::json minimal;
  for (const char* key : {"arch", "n_layers", "dim", "n_heads", "n_kv_heads", "ffn_dim", "vocab", "rope_style"})
    minimal[key] = full.at(key);
  rewrite(minimal);
  const std::string model = " --model " + quoted(synth_model_path("tiny"));
  const auto culprit = d.compare(model + " --json " + quoted(d.dir / "r.json"));
  EXPECT_EQ(culprit.exit_code, 1) << culprit.output;
  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["culprit"]["layer"], 1) << culprit.output;
  EXPECT_EQ(json["culprit"]["op"], "v_proj") << culprit.output;
  nlohmann::json biased = minimal;
  biased["block"] = {{"qkv_bias", true}};
  rewrite(biased);
  const auto refused = d.compare(model);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("differ in block: "), std::string::npos) << refused.output;
  nlohmann::json narrower = minimal;
  narrower["rotary_dim"] = full.at("head_dim").get<int>() / 2;
  rewrite(narrower);
  const auto rotary = d.compare(model);
  EXPECT_EQ(rotary.exit_code, 2) << rotary.output;
  EXPECT_NE(rotary.output.find("differ in rotary_dim: "), std::string::npos) << rotary.output;
}

// --model: each op of B's dump run by the f64 reference on B's own inputs names the culprit.
TEST(CompareCli, ModelFindsTheCulpritOnBsOwnInputs) {
  const Dumps d("culprit");
  struct Case {
    std::string inject;
    std::string culprit;  // LAYER/OP
  };
  for (const Case& c : {Case{"gemm-f16-accum@1", "1/ffn_down"}, Case{"kv-stale-chunk@0", "0/attn"},
                        Case{"rope-chunk-reset@1", "1/rope_q"}, Case{"gqa-head-map@1", "1/attn"}}) {
    SCOPED_TRACE(c.inject);
    d.run_b("--inject " + c.inject);
    const auto r = d.compare("--model synth:tiny --json " + quoted(d.dir / "r.json"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
    ASSERT_TRUE(json["culprit"].is_object()) << r.output;
    EXPECT_EQ(std::to_string(json["culprit"]["layer"].get<int>()) + "/" + json["culprit"]["op"].get<std::string>(),
              c.culprit)
        << r.output;
    EXPECT_FALSE(json.contains("culprit_note"));
    EXPECT_EQ(json["isolation"]["itself_wrong"], true);
    EXPECT_EQ(json["local_positions"], 50);
    const std::size_t slash = c.culprit.find('/');
    EXPECT_NE(r.output.find("culprit  layer " + c.culprit.substr(0, slash) + " " + c.culprit.substr(slash + 1)),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("its own error on B's own inputs"), std::string::npos) << r.output;
    // Every other op of B's dump is within its tolerance on B's own inputs (rope-chunk-reset
    // plants rope_k too).
    for (const auto& op : json["local"]) {
      const bool expected = op["pass"].get<bool>() || op["op"] == json["culprit"]["op"] || op["op"] == "rope_k";
      EXPECT_TRUE(expected) << op["layer"] << "/" << op["op"];
    }
  }
}

// An op whose inputs B did not tap is named with the taps that would decide it; a --model that is
// not B's, or layers without any op to check, are refused.
TEST(CompareCli, ModelSaysWhichTapsWouldDecideAnOpAndRefusesAnotherModel) {
  const Dumps d("undecidable");
  d.run_b("--inject gemm-f16-accum@1 --taps '1/ffn_(act|down)'");
  const auto r = d.compare("--model synth:tiny");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("culprit  layer 1 ffn_down (gemm)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unchecked: 1 op of B's dump could not be checked on B's own inputs: tapping 1/ffn_gate, "
                          "1/ffn_up would make them decidable"),
            std::string::npos)
      << r.output;
  // The op at fault undecidable, the ops that could be checked clean: the headline says unchecked,
  // not that the error accumulates.
  d.run_b("--inject silu-approx@1 --taps '1/ffn_(act|down)'");
  const auto act = d.compare("--model synth:tiny");
  EXPECT_EQ(act.exit_code, 1) << act.output;
  EXPECT_NE(act.output.find("culprit  unchecked: no op checked on B's own inputs is past its tolerance, but 1 op "
                            "could not be checked: tapping 1/ffn_gate, 1/ffn_up would decide it"),
            std::string::npos)
      << act.output;
  const auto no_ops = d.compare("--model synth:tiny --layers 0:0");
  EXPECT_EQ(no_ops.exit_code, 2) << no_ops.output;
  EXPECT_NE(no_ops.output.find("no op in the layers asked for has its output and all of its inputs tapped"),
            std::string::npos)
      << no_ops.output;
  const auto other = d.compare("--model synth:small");
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("--model synth:small: not the model of "), std::string::npos) << other.output;
  const auto bad_layers = d.compare("--model synth:tiny --layers 3:1");
  EXPECT_EQ(bad_layers.exit_code, 2) << bad_layers.output;
  // Checked before the comparison, whatever it finds: a missing model on identical dumps too.
  const auto missing =
      run_tapdiff("compare " + quoted(d.a) + " " + quoted(d.a) + " --model " + quoted(d.dir / "absent.gguf"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_EQ(d.compare("--layers 0:1").exit_code, 2);
}

// A precision the reference cannot emulate for the model (llama.cpp's for a mixture of experts) is
// refused, saying where that precision came from.
TEST(CompareCli, APrecisionTheReferenceCannotEmulateIsRefusedSayingWhereItCameFrom) {
  const auto dir = temp_dir("unemulated");
  const std::string model = quoted(synth_model_path("tiny-moe"));
  const auto run = run_tapdiff("run --model " + model + " --tokens 1,5,9,13,17 --dump " + quoted(dir / "a.h5"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto r = run_tapdiff("compare " + quoted(dir / "a.h5") + " " + quoted(dir / "a.h5") + " --model " + model +
                             " --b-precision llama.cpp");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("B's precision is llama.cpp (given), and the reference cannot emulate it here: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("mixture of experts"), std::string::npos) << r.output;
}

// run --tokens-from B: the reference runs B's own tokens, positions and chunking, decode rows
// included, so every row of B compares (a run of its own would stop where the generations part).
TEST(CompareCli, TokensFromRunsBsRowsSoEveryRowCompares) {
  const Dumps d("tokens-from");
  d.run_b("--inject rope-chunk-reset@1");
  const auto own = d.compare("--json " + quoted(d.dir / "own.json"));
  EXPECT_EQ(nlohmann::json::parse(slurp(d.dir / "own.json"))["rows"]["compared"], 48) << own.output;

  const std::filesystem::path forced = d.dir / "forced.h5";
  const auto run = run_tapdiff("run --model " + quoted(synth_model_path("tiny")) + " --tokens-from " + quoted(d.b) +
                               " --dump " + quoted(forced));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const dumps::DumpReader a(forced.string()), b(d.b.string());
  EXPECT_EQ(a.tokens(), b.tokens());
  EXPECT_EQ(a.positions(), b.positions());
  EXPECT_EQ(a.chunks(), b.chunks());
  EXPECT_EQ(a.decode_flags(), b.decode_flags());

  const auto r = run_tapdiff("compare " + quoted(forced) + " " + quoted(d.b) + " --model synth:tiny --json " +
                             quoted(d.dir / "r.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto json = nlohmann::json::parse(slurp(d.dir / "r.json"));
  EXPECT_EQ(json["rows"]["compared"], 50);
  EXPECT_EQ(json["culprit"]["op"], "rope_q");
  for (const auto& problem : json["problems"]) EXPECT_NE(problem["code"], "generation-diverged");
  // A's summary holds its own greedy choice after the prompt and after each decode step.
  EXPECT_EQ(a.summary()["generated"].size(), 3u);

  const auto refused =
      run_tapdiff("run --model " + quoted(synth_model_path("tiny")) + " --tokens-from " + quoted(d.b) + " --chunk 4");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("it does not take --chunk"), std::string::npos) << refused.output;
}

// B's values that are A's of a neighbouring layer, or A's in the other RoPE channel order, are named.
TEST(CompareCli, LookalikesNameANeighbourAndAPermutation) {
  const Dumps d("lookalike");
  const dumps::DumpReader a(d.a.string());
  // B's 1/attn_residual is A's 0/attn_residual: an index off by one.
  d.set_tap("1/attn_residual", a.read({model::Op::attn_residual, 0}, 0, a.rows()));
  auto r = d.compare();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("neighbour: B's 1/attn_residual holds A's 0/attn_residual"), std::string::npos) << r.output;
  // B's 1/rope_q has each head's interleaved pairs in rotate-half places (head_dim 16).
  std::filesystem::copy_file(d.a, d.b, std::filesystem::copy_options::overwrite_existing);
  const model::HostTensor q = a.read({model::Op::rope_q, 1}, 0, a.rows());
  model::HostTensor moved = q;
  for (std::int64_t row = 0; row < q.rows(); ++row)
    for (std::int64_t base = 0; base < q.cols(); base += 16)
      for (int j = 0; j < 8; ++j) {
        moved.f32()[static_cast<std::size_t>(row * q.cols() + base + j)] = static_cast<float>(q.at(row, base + 2 * j));
        moved.f32()[static_cast<std::size_t>(row * q.cols() + base + 8 + j)] =
            static_cast<float>(q.at(row, base + 2 * j + 1));
      }
  d.set_tap("1/rope_q", moved);
  r = d.compare();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("permuted: B's 1/rope_q holds A's values with each head's channels in the other RoPE "
                          "layout (rotate-half order"),
            std::string::npos)
      << r.output;
  // A wrong value is neither.
  std::filesystem::copy_file(d.a, d.b, std::filesystem::copy_options::overwrite_existing);
  d.corrupt("1/rope_q", 37, 5, 0.5f);
  r = d.compare();
  EXPECT_EQ(r.output.find("neighbour:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("permuted:"), std::string::npos) << r.output;
}

// tapdiff validate lists every problem of a dump at once, where reading stops at the first.
TEST(ValidateCli, ListsEveryProblemOfADumpAtOnce) {
  const Dumps d("validate");
  const auto sound = run_tapdiff("validate " + quoted(d.b));
  EXPECT_EQ(sound.exit_code, 0) << sound.output;
  EXPECT_NE(sound.output.find("no problem found"), std::string::npos) << sound.output;
  {
    const dumps::h5::File file = dumps::h5::File::open(d.b.string(), dumps::h5::File::Mode::write);
    const dumps::h5::Group taps = file.open_group("taps");
    const float zero = 0;
    const auto add = [&](const std::string& layer, const std::string& op, hsize_t width) {
      const dumps::h5::Group group = taps.open_group(layer);
      group.create_dataset(op, dumps::h5::Type::f32, dumps::h5::Layout::fixed({50, width}))
          .write_rows(0, 1, dumps::h5::memory_type(dumps::h5::Type::f32), std::vector<float>(width, zero).data());
    };
    add("1", "mystery", 64);
    add("0", "q_norm", 63);  // a width no op of this model has
    const std::int32_t token = 9999;
    file.open_group("rows").open_dataset("token").write_rows(3, 1, dumps::h5::memory_type(dumps::h5::Type::i32),
                                                             &token);
  }
  std::vector<std::int32_t> restart;
  for (int r = 20; r < 30; ++r) restart.push_back(r - 16);
  d.set_positions(20, restart);
  const auto r = run_tapdiff("validate " + quoted(d.b));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/taps/1/mystery: unknown op 'mystery'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/taps/0/q_norm: width 63"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/rows/token: 1 token outside the vocabulary [0, 512), the first at row 3"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("/rows/position: row 20 is at position 4 after 19"), std::string::npos) << r.output;
  // compare refuses the same file at its first problem.
  EXPECT_EQ(d.compare().exit_code, 2);
}

// A compute_dtype without tolerances is refused by name, never held to another dtype's bounds.
TEST(CompareCli, AComputeDtypeWithoutTolerancesIsRefused) {
  const Dumps d("dtype");
  dumps::h5::File::open(d.b.string(), dumps::h5::File::Mode::write).set_string("compute_dtype", "fp8");
  const auto r = d.compare();
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("has compute_dtype 'fp8': tapdiff has tolerances for " + model::precision_names() + " only"),
            std::string::npos)
      << r.output;
}

TEST(CompareCli, TapsAndMaxRowsNarrowTheComparison) {
  const Dumps d("narrow");
  d.corrupt("1/rope_q", 37, 0, 0.5f);
  EXPECT_EQ(d.compare("--taps '^0/'").exit_code, 0);
  EXPECT_EQ(d.compare("--max-rows 30").exit_code, 0);
  const auto r = d.compare("--taps 'rope_q$'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("diverged at layer 1 rope_q"), std::string::npos) << r.output;
}

TEST(CompareCli, ToleranceFilesDecide) {
  const Dumps d("tolerance");
  d.corrupt("0/ffn_up", 3, 1, 1e-4f);
  std::ofstream(d.dir / "loose.toml") << "[op.ffn_up]\nmax_abs = 1e-3\n";
  std::ofstream(d.dir / "strict.toml") << "[op.ffn_up]\nmax_abs = 1e-6\n";
  EXPECT_EQ(d.compare("--tolerances " + quoted(d.dir / "loose.toml")).exit_code, 0);
  const auto r = d.compare("--tolerances " + quoted(d.dir / "strict.toml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("diverged at layer 0 ffn_up (gemm): max_abs "), std::string::npos) << r.output;
}

TEST(CompareCli, BadInputExitsWithCode2AndSaysWhy) {
  const Dumps d("bad");
  // A run of the same model fed other tokens.
  const auto other = d.dir / "other.h5";
  ASSERT_EQ(run_tapdiff("run --model " + quoted(synth_model_path("tiny")) + " --tokens 1,2,3 --dump " + quoted(other))
                .exit_code,
            0);
  auto r = run_tapdiff("compare " + quoted(d.a) + " " + quoted(other));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("different tokens"), std::string::npos) << r.output;
  // A run of another model.
  const auto small = d.dir / "small.h5";
  ASSERT_EQ(run_tapdiff("run --model " + quoted(synth_model_path("small")) + " --tokens 1,2,3 --dump " + quoted(small))
                .exit_code,
            0);
  r = run_tapdiff("compare " + quoted(d.a) + " " + quoted(small));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("different models"), std::string::npos) << r.output;
  // Missing and unreadable files, a bad tolerance file.
  r = d.compare("--tolerances " + quoted(d.dir / "none.toml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("none.toml: expected a regular file, found no such file"), std::string::npos) << r.output;
  std::ofstream(d.dir / "bad.toml") << "[op.rope_x]\nnmse = 1\n";
  r = d.compare("--tolerances " + quoted(d.dir / "bad.toml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:1:5: op.rope_x"), std::string::npos) << r.output;
  EXPECT_EQ(run_tapdiff("compare " + quoted(d.a) + " " + quoted(d.dir / "absent.h5")).exit_code, 2);
  std::ofstream(d.dir / "text.h5") << "not hdf5";
  EXPECT_EQ(run_tapdiff("compare " + quoted(d.a) + " " + quoted(d.dir / "text.h5")).exit_code, 2);
  EXPECT_EQ(run_tapdiff("compare " + quoted(d.a)).exit_code, 2);  // B missing
  // A report that would overwrite an input (or a file of an input folder), or another report: refused, inputs intact.
  const auto before = std::filesystem::file_size(d.b);
  r = d.compare("--html " + quoted(d.b));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("expected a file that is none of the inputs, found the input"), std::string::npos)
      << r.output;
  EXPECT_EQ(std::filesystem::file_size(d.b), before);
  r = d.compare("--tolerances " + quoted(d.dir / "bad.toml") + " --json " + quoted(d.dir / "bad.toml"));
  EXPECT_NE(r.output.find("--json"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(d.dir / "bad.toml"), "[op.rope_x]\nnmse = 1\n");
  r = d.compare("--json " + quoted(d.dir / "r") + " --junit " + quoted(d.dir / "." / "r"));
  EXPECT_NE(r.output.find("--junit " + (d.dir / "." / "r").string() + ": --json writes that file too"),
            std::string::npos)
      << r.output;
  r = run_tapdiff("compare " + quoted(d.a) + " " + quoted(d.dir) + " --json " + quoted(d.dir / "x.json"));
  EXPECT_NE(r.output.find("a file inside the input"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tapdiff::testing
