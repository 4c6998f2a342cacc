// Dumps and options that are wrong in ways a reader must refuse cleanly (exit 2, one line naming
// the file or option): paths that are not files, extents no file can hold, JSON nested too deep,
// slice ranges out of order or out of bounds.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include <fmt/core.h>

#include "dumps/h5.h"
#include "dumps/schema.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

namespace h5 = dumps::h5;

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// `tapdiff <args>` must fail with exit 2 and one line "tapdiff: error: <start>...", holding `part`.
void expect_refused(const std::string& args, const std::string& start, const std::string& part) {
  const CommandResult r = run_command(fmt::format("timeout -s KILL 60 '{}' {}", TAPDIFF_BINARY, args));
  EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << args << ": " << r.output;
  EXPECT_TRUE(r.output.starts_with("tapdiff: error: " + start)) << args << ": " << r.output;
  EXPECT_NE(r.output.find(part), std::string::npos) << args << ": " << r.output;
}

// --- Paths that are not regular files ---------------------------------------------------------

TEST(DumpBadInput, ADirectoryOrAFifoIsBadInputNamedAndNeverOpened) {
  const std::string dump = dump_path("run.h5");
  write_fake_dump(dump);
  const std::string folder = dump_path("folder.h5");
  std::filesystem::create_directories(folder);
  const std::string fifo = dump_path("fifo.h5");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // opening it for reading would wait for a writer
  for (const auto& [path, kind] : {std::pair{folder, "a directory"}, std::pair{fifo, "a FIFO"}}) {
    const std::string expected = fmt::format("{}: expected a dump file, found {}", path, kind);
    expect_refused(fmt::format("inspect '{}'", path), expected, "");
    expect_refused(fmt::format("compare '{}' '{}'", dump, path), expected, "");
    expect_refused(fmt::format("compare '{}' '{}'", path, dump), expected, "");
  }
}

// --- Extents that no file of this size holds ----------------------------------------------------

TEST(DumpBadInput, RowsBeyondWhatTheFileCanHoldAreRefusedNamingFileAndDataset) {
  const std::string dump = dump_path("huge.h5");
  write_fake_dump(dump);
  {
    const hsize_t rows = hsize_t{1} << 34;  // 64 GiB of int32 per /rows dataset, in a small file
    const h5::File file = h5::File::open(dump, h5::File::Mode::write);
    const h5::Group provenance = file.open_group(dumps::names::kRows);
    for (const char* name :
         {dumps::names::kPosition, dumps::names::kChunk, dumps::names::kDecode, dumps::names::kToken})
      provenance.open_dataset(name).set_extent(std::span(&rows, 1));
    file.set_int(dumps::names::kRowsComplete, static_cast<std::int64_t>(rows));
  }
  expect_refused(fmt::format("inspect '{}'", dump), dump + ": /rows/position: expected at most ",
                 "in a " + std::to_string(std::filesystem::file_size(dump)) + "-byte file, found an extent of " +
                     std::to_string(hsize_t{1} << 34));
}

// --- JSON attributes ------------------------------------------------------------------------------

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(DumpBadInput, JsonNestedTooDeepIsRefusedNamingTheAttribute) {
  for (const char* attribute : {dumps::names::kModelConfig, "kernels", dumps::names::kSummary}) {
    const std::string dump = dump_path(fmt::format("deep-{}.h5", attribute));
    write_fake_dump(dump);
    { h5::File::open(dump, h5::File::Mode::write).set_string(attribute, nested(55000)); }
    expect_refused(fmt::format("inspect '{}'", dump), fmt::format("{}: attribute '{}': expected ", dump, attribute),
                   "nested deeper than 128 levels");
  }
}

TEST(DumpBadInput, MessagesQuoteAnExcerptOfALargeJsonValue) {
  const std::string dump = dump_path("large.h5");
  write_fake_dump(dump);
  const std::string config = nested(100) + std::string(100000, ' ');  // parses: an array, not an object
  { h5::File::open(dump, h5::File::Mode::write).set_string(dumps::names::kModelConfig, config); }
  const CommandResult r = run_tapdiff(fmt::format("inspect '{}'", dump));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(
      r.output.starts_with(fmt::format("tapdiff: error: {}: model_config: expected a JSON object, found '[[[", dump)))
      << r.output;
  EXPECT_LT(r.output.size(), dump.size() + 200) << r.output;
}

// --- inspect --slice, --rows, --cols ------------------------------------------------------------------

TEST(InspectCli, SliceRangesOutOfOrderOrBoundsAreUsageErrorsNamingTheOption) {
  const std::string dump = dump_path("run.h5");
  write_fake_dump(dump);  // 9 rows; 0/q_proj is 8 columns wide
  const std::string slice = fmt::format("inspect '{}' --slice 0/q_proj ", dump);
  const std::string rows = "--rows: expected FIRST:END with 0 <= FIRST < END and FIRST < 9 (the dump's rows), found";
  const std::string cols =
      "--cols: expected FIRST:END with 0 <= FIRST < END and FIRST < 8 (the tensor's columns), found";
  for (const char* range : {"3:1", "2:2", "-1:2", "9:12", "9"})
    expect_refused(slice + "--rows=" + range, rows, fmt::format("'{}'", range));
  for (const char* range : {"5:4", "-3:-1", "8:9", "9223372036854775807"})
    expect_refused(slice + "--cols=" + range, cols, fmt::format("'{}'", range));
  for (const char* range : {"0:99999999999999999999", "1:x", "1:", ":3", "1:2:3", " 1:2"})
    expect_refused(slice + "--rows='" + range + "'", "--rows: expected FIRST:END (two integers), found",
                   fmt::format("'{}'", range));
  for (const char* name : {"99999999999/q_proj", "0x/q_proj", "/q_proj", "0/nope", "0"})
    expect_refused(fmt::format("inspect '{}' --slice '{}'", dump, name), "--slice: expected LAYER/OP",
                   fmt::format("'{}'", name));
}

TEST(InspectCli, SliceEndPastTheLastRowOrColumnStopsThere) {
  const std::string dump = dump_path("run.h5");
  write_fake_dump(dump);
  const CommandResult r = run_tapdiff(fmt::format("inspect '{}' --slice 0/q_proj --rows 7:100 --cols 6:1000", dump));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0/q_proj rows [7, 9) cols [6, 8) of 9x8"), std::string::npos) << r.output;
  const std::string row8 = fmt::format("       8: {:>11.5g} {:>11.5g}\n", fake_value({model::Op::q_proj, 0}, 8, 6),
                                       fake_value({model::Op::q_proj, 0}, 8, 7));
  EXPECT_NE(r.output.find(row8), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tapdiff::testing
