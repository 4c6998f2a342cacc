// Inputs from a robustness sweep that once crashed, hung, damaged a file or ran to a wrong answer
// at exit 0: each now gives a clear error (exit 2 through the binary) or a warning.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "bisect/compare/tolerances.h"
#include "formats/gguf_reader.h"
#include "formats/load_model.h"
#include "formats/weight_scan.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "model/printable.h"
#include "model/weights.h"
#include "tests/model_file_fixtures.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "text/tokenizer.h"
#include "text/vocabulary.h"

namespace tapdiff {
namespace {

namespace fs = std::filesystem;
using testing::quoted;
using testing::run_command;
using testing::run_tapdiff;
using testing::temp_dir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spill(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// The message of the FormatError that loading path throws ("" and a failure when none).
std::string load_error(const fs::path& path) {
  try {
    formats::load_model(path);
  } catch (const FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a FormatError loading " << path;
  return "";
}

void expect_exit_2(const testing::CommandResult& r, std::initializer_list<std::string_view> parts) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (std::string_view part : parts) EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
}

std::string nested_arrays(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

TEST(HostileInput, JsonNestedDeeperThanTheBoundIsRefusedWithoutRecursion) {
  const std::string deep = "{\"a\": " + nested_arrays(55000) + "}";
  try {
    model::parse_json_text(deep, "x.json", "a model config");
    FAIL() << "accepted JSON nested 55000 deep";
  } catch (const FormatError& e) {
    EXPECT_NE(
        std::string(e.what()).find("x.json: expected a model config in JSON, found values nested deeper than 128"),
        std::string::npos)
        << e.what();
  }
  const nlohmann::json ok = model::parse_json_text(nested_arrays(model::kMaxJsonDepth), "y.json", "z");
  EXPECT_TRUE(ok.is_array());
  nlohmann::json wide = nlohmann::json::array();
  for (int i = 0; i < 10000; ++i) wide.push_back(i);
  EXPECT_LE(model::json_excerpt(wide).size(), 80u);
  EXPECT_EQ(model::json_excerpt(nlohmann::json{{"k", "\x01"}}), "{\"k\":\"\\u0001\"}");
}

// A safetensors header of 200,000 tensors: nlohmann's parser callback (the depth bound it had)
// made parsing quadratic in an object's members, 45 s at 30,000; the bound is now a pass over the
// brackets. Brackets inside strings are no nesting.
TEST(HostileInput, AWideJsonObjectParsesInOnePass) {
  std::string wide = "{";
  for (int i = 0; i < 200000; ++i)
    wide +=
        fmt::format("{}\"t{}[[{{\\\"\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", i ? "," : "", i);
  wide += "}";
  const nlohmann::json j = model::parse_json_text(wide, "w.json", "a header");
  EXPECT_EQ(j.size(), 200000u);
  EXPECT_TRUE(j.contains("t0[[{\""));
}

// Names from files reach messages escaped and cut: a name cannot forge a line of tapdiff's output,
// nor fill the terminal with megabytes.
TEST(HostileInput, NamesFromFilesArePrintedEscapedAndShortened) {
  EXPECT_EQ(model::printable("a\x1b[2J\nnote: b\\\r\x7f"), "a\\x1b[2J\\nnote: b\\\\\\x0d\\x7f");
  EXPECT_EQ(model::printable(std::string(5'000'000, 'x'), 8), "xxxxxxxx...(5000000 bytes)");
  EXPECT_EQ(model::printable("model.layers.0.mlp"), "model.layers.0.mlp");
}

TEST(HostileInput, DeepJsonInAConfigOrASafetensorsHeaderIsAFormatError) {
  const auto dir = temp_dir("deep-json");
  testing::write_hf_folder(dir, testing::tiny_hf());
  const std::string config = slurp(dir / "config.json");
  spill(dir / "config.json", "{\"x\": " + nested_arrays(55000) + ", " + config.substr(1));
  EXPECT_NE(load_error(dir).find("nested deeper than 128"), std::string::npos);

  testing::write_hf_folder(dir, testing::tiny_hf());
  const std::string header = "{\"__metadata__\": {\"m\": " + nested_arrays(55000) + "}}";
  std::string file(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  spill(dir / "model.safetensors", file + header);
  const std::string msg = load_error(dir);
  EXPECT_NE(msg.find("model.safetensors: expected a safetensors header in JSON"), std::string::npos) << msg;
}

// A safetensors file as bytes, its header parsed, and the file written back with a new header.
struct SafetensorsBytes {
  fs::path path;
  std::string bytes;
  nlohmann::json header;
  std::string data;

  explicit SafetensorsBytes(const fs::path& p) : path(p), bytes(slurp(p)) {
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    header = nlohmann::json::parse(bytes.substr(8, n));
    data = bytes.substr(8 + n);
  }
  // Writes the header padded with `padding` spaces, its length field `length_error` off.
  void write(std::size_t padding, int length_error = 0) const {
    const std::string text = header.dump() + std::string(padding, ' ');
    const std::uint64_t n = text.size() + static_cast<std::uint64_t>(static_cast<std::int64_t>(length_error));
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    spill(path, out + text + data);
  }
};

// The header's length field one short: the data section starts one byte early.
TEST(HostileInput, SafetensorsHeaderLengthOneShortIsRefused) {
  const auto dir = temp_dir("st-short");
  testing::write_hf_folder(dir, testing::tiny_hf());
  const SafetensorsBytes file(dir / "model.safetensors");
  file.write(8);
  EXPECT_NO_THROW(formats::load_model(dir));
  file.write(8, -1);
  const std::string msg = load_error(dir);
  EXPECT_NE(msg.find("expected the tensors' data to end the file at byte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 1 more bytes"), std::string::npos) << msg;
}

TEST(HostileInput, SafetensorsOverlappingOffsetsAreRefused) {
  const auto dir = temp_dir("st-overlap");
  testing::write_hf_folder(dir, testing::tiny_hf());
  SafetensorsBytes file(dir / "model.safetensors");
  // v_proj made to share k_proj's bytes (both [32, 64]): its own bytes become a hole after them.
  file.header["model.layers.0.self_attn.v_proj.weight"]["data_offsets"] =
      file.header["model.layers.0.self_attn.k_proj.weight"]["data_offsets"];
  file.write(0);
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("tensor 'model.layers.0.self_attn.v_proj.weight': expected data that no other tensor uses"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("overlapping tensor 'model.layers.0.self_attn.k_proj.weight'"), std::string::npos) << msg;
  // Moved past the end of the data instead, it leaves a hole.
  testing::write_hf_folder(dir, testing::tiny_hf());
  SafetensorsBytes fresh(dir / "model.safetensors");
  auto& v = fresh.header["model.layers.0.self_attn.v_proj.weight"]["data_offsets"];
  const std::uint64_t size = v[1].get<std::uint64_t>() - v[0].get<std::uint64_t>();
  v = {fresh.data.size(), fresh.data.size() + size};
  fresh.data += std::string(size, '\0');
  fresh.write(0);
  msg = load_error(dir);
  EXPECT_NE(msg.find("that belong to no tensor"), std::string::npos) << msg;
}

TEST(HostileInput, GgufWithBytesInsertedInItsDataSectionIsRefused) {
  const auto dir = temp_dir("gguf-insert");
  testing::write_tiny_gguf(dir / "m.gguf", {});
  const std::string bytes = slurp(dir / "m.gguf");
  const formats::GgufFile parsed(dir / "m.gguf");
  const std::size_t middle = parsed.data_offset() + (bytes.size() - parsed.data_offset()) / 2;
  for (const std::size_t inserted : {1u, 32u, 4096u}) {
    spill(dir / "x.gguf", bytes.substr(0, middle) + std::string(inserted, '\x7f') + bytes.substr(middle));
    const std::string msg = load_error(dir / "x.gguf");
    EXPECT_NE(msg.find("bytes inserted or appended"), std::string::npos) << msg;
  }
  spill(dir / "y.gguf", bytes + std::string(64, '\0'));
  EXPECT_NE(load_error(dir / "y.gguf").find("bytes inserted or appended"), std::string::npos);
}

TEST(HostileInput, NonFiniteRopeBaseIsRefused) {
  model::ModelConfig c = testing::fake_config();
  c.rope_base = std::numeric_limits<double>::infinity();
  EXPECT_THROW(c.validate("cfg"), FormatError);
  c.rope_base = std::nan("");
  EXPECT_THROW(c.validate("cfg"), FormatError);
  expect_exit_2(run_tapdiff("synth -o /tmp/never.gguf --rope-base inf"), {"--rope-base"});
}

TEST(HostileInput, Gpt2VocabularyWithoutMergesIsRefusedNamingTheFile) {
  text::Vocabulary v;
  v.source = "/models/v.gguf";
  v.model = "gpt2";
  v.tokens = {"a", "b", "ab"};
  try {
    const text::Tokenizer t(v);
    FAIL() << "accepted a gpt2 vocabulary without merges";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("/models/v.gguf: tokenizer: a byte-level BPE vocabulary (model 'gpt2') "
                                         "needs tokenizer.ggml.merges"),
              std::string::npos)
        << e.what();
  }
  v.model = "llama";
  v.scores = {0.0f};
  try {
    const text::Tokenizer t(v);
    FAIL() << "accepted 3 tokens with 1 score";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("/models/v.gguf: tokenizer: the vocabulary has 3 tokens but 1 scores"),
              std::string::npos)
        << e.what();
  }
}

TEST(HostileInput, SynthRefusesImpossibleShapesAndNumbers) {
  for (const std::string args : {"--heads 0", "--dim -64", "--layers 0", "--outlier-scale nan", "--outlier-scale -1",
                                 "--outliers -2", "--kv-heads 0", "--rope-base nan"})
    expect_exit_2(run_tapdiff("synth -o /tmp/never.gguf " + args), {});
  EXPECT_FALSE(fs::exists("/tmp/never.gguf"));
}

TEST(HostileInput, SynthNeverRemovesOrReplacesWhatItDidNotCreate) {
  const auto dir = temp_dir("synth-damage");
  expect_exit_2(run_tapdiff("synth -o /dev/null"), {"found a character device"});
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  fs::create_directory(dir / "folder");
  expect_exit_2(run_tapdiff("synth -o " + quoted(dir / "folder")), {"found a directory"});
  EXPECT_TRUE(fs::is_directory(dir / "folder"));
  // A write error (file size limit: write() fails with EFBIG) leaves an existing file as it was.
  spill(dir / "old.gguf", "precious");
  const auto r = run_command("bash -c \"trap '' XFSZ; ulimit -f 64; '" + std::string(TAPDIFF_BINARY) +
                             "' synth --shape small -o " + quoted(dir / "old.gguf") + "\"");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(slurp(dir / "old.gguf"), "precious");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 2u) << "the partial file was left behind";
}

TEST(HostileInput, FifoAndDirectoriesAsInputsAreBadInputNotHangs) {
  const auto dir = temp_dir("fifo");
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  const std::string timeout = "timeout 60 '" + std::string(TAPDIFF_BINARY) + "' ";
  expect_exit_2(run_command(timeout + "run --model " + quoted(dir / "pipe") + " --tokens 1"), {"found a FIFO"});
  expect_exit_2(run_command(timeout + "run --model synth:tiny --prompt-file " + quoted(dir / "pipe")),
                {"--prompt-file", "found a FIFO"});
  expect_exit_2(run_tapdiff("run --model synth:tiny --prompt-file " + quoted(dir)),
                {"--prompt-file", "expected a regular file, found a directory"});
  const auto hf = temp_dir("shard-dir");
  testing::write_hf_folder(hf, testing::tiny_hf());
  fs::remove(hf / "model.safetensors");
  fs::create_directory(hf / "model.safetensors");
  expect_exit_2(run_tapdiff("run --model " + quoted(hf) + " --tokens 1"), {"model.safetensors", "found a directory"});
}

TEST(HostileInput, ToleranceFileThatIsADirectoryOrMissingIsRefused) {
  const auto dir = temp_dir("tol-dir");
  EXPECT_THROW(bisect::Tolerances::from_file(dir.string()), UsageError);
  EXPECT_THROW(bisect::Tolerances::from_file((dir / "absent.toml").string()), UsageError);
  expect_exit_2(run_tapdiff("bisect --model synth:tiny --tokens 1,2 --tolerances " + quoted(dir)),
                {"tolerance file", "found a directory"});
}

TEST(HostileInput, VocabMustExistAndMatchTheModelsSize) {
  const auto dir = temp_dir("vocab");
  expect_exit_2(run_tapdiff("run --model synth:tiny --prompt hi --vocab " + quoted(dir / "absent.gguf")),
                {"--vocab", "absent.gguf"});
  const fs::path other = testing::synth_model_path("small");  // vocab 2048, tiny's is 512
  expect_exit_2(run_tapdiff("run --model synth:tiny --prompt hi --vocab " + quoted(other)),
                {"expected a vocabulary of 512 tokens (the model's), found 2048"});
  const auto dump = dir / "d.h5";
  ASSERT_EQ(run_tapdiff("run --model synth:tiny --tokens 1,2 --dump " + quoted(dump)).exit_code, 0);
  expect_exit_2(run_tapdiff("inspect " + quoted(dump) + " --top-k 3 --vocab " + quoted(dir / "absent.gguf")),
                {"absent.gguf"});
  expect_exit_2(run_tapdiff("inspect " + quoted(dump) + " --top-k 3 --vocab " + quoted(other)),
                {"expected a vocabulary of 512 tokens"});
}

TEST(HostileInput, NumericOptionsRefuseNanInfinityAndNegativeThreads) {
  for (const std::string args : {"--k nan", "--k inf", "--k -1", "--min-floor nan", "--threads -1"})
    expect_exit_2(run_tapdiff("bisect --model synth:tiny --tokens 1,2 " + args), {});
  expect_exit_2(run_tapdiff("run --model synth:tiny --tokens 1,2 --threads -1"), {"--threads"});
}

TEST(HostileInput, NonFiniteWeightsAreNamedInAWarning) {
  const auto dir = temp_dir("nan-weights");
  testing::write_tiny_gguf(dir / "m.gguf", {});
  std::string bytes = slurp(dir / "m.gguf");
  {
    const formats::GgufFile f(dir / "m.gguf");
    const formats::GgufTensorInfo* t = f.find_tensor("blk.1.ffn_up.weight");
    ASSERT_NE(t, nullptr);
    const std::size_t at = f.data_offset() + t->offset;
    const float bad[3] = {std::nanf(""), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
    std::memcpy(bytes.data() + at + 40, bad, sizeof bad);
  }
  spill(dir / "m.gguf", bytes);
  const auto m = formats::load_model(dir / "m.gguf");
  const auto found = formats::find_non_finite_weights(*m);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].tensor, "blk.1.ffn_up.weight");
  EXPECT_EQ(found[0].nan, 1u);
  EXPECT_EQ(found[0].inf, 2u);
  const auto r = run_tapdiff("run --model " + quoted(dir / "m.gguf") + " --tokens 1,2");
  EXPECT_NE(r.output.find("warning: " + (dir / "m.gguf").string() +
                          ": tensor 'blk.1.ffn_up.weight' holds 1 NaN and 2 infinite values of 6144"),
            std::string::npos)
      << r.output;
}

TEST(HostileInput, RunningPastTheContextLengthWarns) {
  const auto dir = temp_dir("context");
  ASSERT_EQ(run_tapdiff("synth -o " + quoted(dir / "c.gguf") + " --context 4").exit_code, 0);
  const auto within = run_tapdiff("run --model " + quoted(dir / "c.gguf") + " --tokens 1,2 --generate 2");
  EXPECT_EQ(within.output.find("warning"), std::string::npos) << within.output;
  const auto past = run_tapdiff("run --model " + quoted(dir / "c.gguf") + " --tokens 1,2,3 --generate 2");
  EXPECT_EQ(past.exit_code, 0) << past.output;
  EXPECT_NE(past.output.find("warning: the run reaches position 4, past the model's context length of 4"),
            std::string::npos)
      << past.output;
}

}  // namespace
}  // namespace tapdiff
