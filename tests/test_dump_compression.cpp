// Compressed dumps (`tapdiff run --compress[=LEVEL]`): HDF5's shuffle + deflate filters on the tap
// datasets, read back bit for bit by DumpReader and by h5py, smaller than the plain dump.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dumps/dump_reader.h"
#include "dumps/h5.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff {
namespace {

using dumps::DumpReader;
using model::HostTensor;
using model::TensorId;

// One run of synth:small (realistic activations: a trained-like scale, outlier-free random
// weights), 48 tokens in chunks of 20 then 4 decode steps, dumped plain and compressed.
class DumpCompression : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Per process: ctest runs each test in its own process, in parallel, and the suite set-up has
    // no current test to make temp_dir's name unique.
    dir_ = new std::filesystem::path(testing::temp_dir("dump-compression-" + std::to_string(::getpid())));
    const std::string run = "run --model '" + testing::synth_model_path("small").string() + "' --tokens " + tokens() +
                            " --chunk 20 --generate 5 --dump ";
    plain_ = new testing::CommandResult(testing::run_tapdiff(run + "'" + path("plain.h5") + "'"));
    compressed_ = new testing::CommandResult(testing::run_tapdiff(run + "'" + path("gzip.h5") + "' --compress"));
  }
  static void TearDownTestSuite() {
    delete plain_;
    delete compressed_;
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string tokens() {
    std::string list = "1";
    for (int i = 1; i < 48; ++i) list += "," + std::to_string(3 + (i * 7919) % 2000);
    return list;
  }
  void SetUp() override {
    ASSERT_EQ(plain_->exit_code, 0) << plain_->output;
    ASSERT_EQ(compressed_->exit_code, 0) << compressed_->output;
  }

  static std::filesystem::path* dir_;
  static testing::CommandResult* plain_;
  static testing::CommandResult* compressed_;
};
std::filesystem::path* DumpCompression::dir_ = nullptr;
testing::CommandResult* DumpCompression::plain_ = nullptr;
testing::CommandResult* DumpCompression::compressed_ = nullptr;

// The filters of a tap dataset as (filter id, first parameter) pairs, in pipeline order.
std::vector<std::pair<int, unsigned>> filters(const std::string& file, const std::string& dataset) {
  const auto h5 = dumps::h5::File::open(file);
  const dumps::h5::Id data(H5Dopen2(h5.id(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  const dumps::h5::Id dcpl(H5Dget_create_plist(data.get()), H5Pclose);
  std::vector<std::pair<int, unsigned>> out;
  for (int i = 0; i < H5Pget_nfilters(dcpl.get()); ++i) {
    unsigned flags = 0, values[4] = {};
    std::size_t n_values = 4;
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n_values, values, 0, nullptr, nullptr);
    out.emplace_back(id, n_values > 0 ? values[0] : 0u);
  }
  return out;
}

TEST_F(DumpCompression, ReadsBackBitIdenticalToThePlainDump) {
  const DumpReader plain(path("plain.h5"));
  const DumpReader compressed(path("gzip.h5"));
  EXPECT_TRUE(compressed.complete());
  ASSERT_EQ(compressed.rows(), 52);
  ASSERT_EQ(compressed.tensors(), plain.tensors());
  EXPECT_EQ(compressed.tokens(), plain.tokens());
  EXPECT_EQ(compressed.chunks(), plain.chunks());
  for (const TensorId& id : plain.tensors()) {
    const HostTensor a = plain.read(id, 0, plain.rows());
    const HostTensor b = compressed.read(id, 0, compressed.rows());
    ASSERT_EQ(a.size(), b.size()) << model::to_string(id);
    for (std::size_t i = 0; i < a.f32().size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(a.f32()[i]), std::bit_cast<std::uint32_t>(b.f32()[i]))
          << model::to_string(id) << " element " << i;
  }
}

TEST_F(DumpCompression, TapDatasetsCarryShuffleThenDeflateAndTheDumpSaysSo) {
  EXPECT_EQ(filters(path("gzip.h5"), "/taps/2/ffn_up"),
            (std::vector<std::pair<int, unsigned>>{{H5Z_FILTER_SHUFFLE, 4u}, {H5Z_FILTER_DEFLATE, 1u}}));
  EXPECT_TRUE(filters(path("plain.h5"), "/taps/2/ffn_up").empty());
  EXPECT_TRUE(filters(path("gzip.h5"), "/rows/position").empty());  // provenance stays plain
  EXPECT_EQ(DumpReader(path("gzip.h5")).metadata().compression, "shuffle+gzip-1");
  EXPECT_EQ(DumpReader(path("plain.h5")).metadata().compression, "none");
}

TEST_F(DumpCompression, CompressedDumpIsSmaller) {
  const auto plain = std::filesystem::file_size(path("plain.h5"));
  const auto compressed = std::filesystem::file_size(path("gzip.h5"));
  EXPECT_GT(plain, 4000000u);  // 52 rows of 21760 f32 values
  EXPECT_LT(compressed, plain * 95 / 100) << compressed << " vs " << plain;
}

TEST_F(DumpCompression, LevelIsRecorded) {
  const std::string path9 = path("gzip9.h5");
  const auto result = testing::run_tapdiff("run --model '" + testing::synth_model_path("small").string() +
                                           "' --tokens 1,5,9 --taps 'ffn_up' --dump '" + path9 + "' --compress=9");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(DumpReader(path9).metadata().compression, "shuffle+gzip-9");
  EXPECT_EQ(filters(path9, "/taps/0/ffn_up")[1], (std::pair<int, unsigned>{H5Z_FILTER_DEFLATE, 9u}));
}

TEST(DumpCompressionCli, BadLevelIsAUsageErrorWithExit2) {
  const std::string model = testing::synth_model_path("tiny").string();
  const std::string dump = (testing::temp_dir("dump-compression") / "x.h5").string();
  for (const std::string level : {"0", "10", "fast", "-1"}) {
    const auto result =
        testing::run_tapdiff("run --model '" + model + "' --tokens 1,2 --dump '" + dump + "' --compress=" + level);
    EXPECT_EQ(result.exit_code, 2) << level << ": " << result.output;
    EXPECT_NE(
        result.output.find("--compress: expected a gzip level from 1 (fastest) to 9 (smallest), found '" + level + "'"),
        std::string::npos)
        << result.output;
    EXPECT_FALSE(std::filesystem::exists(dump));
  }
}

// --- h5py --------------------------------------------------------------------------------------

TEST_F(DumpCompression, H5pyReadsTheCompressedDumpBitForBit) {
  TAPDIFF_REQUIRE_H5PY(python);
  const std::string script = path("compare.py");
  std::ofstream(script) << R"(
import json, sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as plain, h5py.File(sys.argv[2], "r") as gz:
    names = []
    gz["taps"].visit(lambda name: names.append(name) if isinstance(gz["taps"][name], h5py.Dataset) else None)
    same = all(np.array_equal(plain["taps"][n][:].view(np.uint32), gz["taps"][n][:].view(np.uint32)) for n in names)
    d = gz["taps/2/ffn_up"]
    print(json.dumps({"datasets": len(names), "same": bool(same), "compression": d.compression,
                      "level": d.compression_opts, "shuffle": bool(d.shuffle), "shape": list(d.shape),
                      "value": float(d[7, 11]), "attr": gz.attrs["compression"]}))
)";
  const testing::CommandResult py =
      testing::run_command(python + " '" + script + "' '" + path("plain.h5") + "' '" + path("gzip.h5") + "'");
  ASSERT_EQ(py.exit_code, 0) << py.output;
  const nlohmann::json out = nlohmann::json::parse(py.output);
  const DumpReader reader(path("gzip.h5"));
  EXPECT_EQ(out["datasets"], reader.tensors().size());
  EXPECT_EQ(out["same"], true);
  EXPECT_EQ(out["compression"], "gzip");
  EXPECT_EQ(out["level"], 1);
  EXPECT_EQ(out["shuffle"], true);
  EXPECT_EQ(out["shape"], (nlohmann::json{52, 704}));
  EXPECT_EQ(out["value"].get<double>(), reader.read({model::Op::ffn_up, 2}, 7, 1).at(0, 11));
  EXPECT_EQ(out["attr"], "shuffle+gzip-1");
}

}  // namespace
}  // namespace tapdiff
