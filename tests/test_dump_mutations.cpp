// Damaged dumps: a few hundred seeded random mutations of the metadata of a real dump, each
// either read or refused by `tapdiff inspect` with exit 2 and a one-line message naming the
// file; never a crash, never a hang.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "dumps/h5.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

namespace h5 = dumps::h5;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// [address, address + size) of the raw data of every dataset in the file: what a mutation of
// would change values, not structure.
std::vector<std::pair<hsize_t, hsize_t>> raw_data_ranges(const std::string& path) {
  std::vector<std::pair<hsize_t, hsize_t>> ranges;
  const h5::File file = h5::File::open(path);
  auto add = [&](const h5::Group& group, const std::string& name) {
    const h5::Id data(H5Dopen2(group.id(), name.c_str(), H5P_DEFAULT), H5Dclose);
    hsize_t n = 0;
    if (H5Dget_num_chunks(data.get(), H5S_ALL, &n) < 0) {  // contiguous
      ranges.emplace_back(H5Dget_offset(data.get()), H5Dget_storage_size(data.get()));
      return;
    }
    for (hsize_t i = 0; i < n; ++i) {
      hsize_t offset[2] = {}, size = 0;
      haddr_t address = 0;
      unsigned mask = 0;
      H5Dget_chunk_info(data.get(), H5S_ALL, i, offset, &mask, &address, &size);
      ranges.emplace_back(address, size);
    }
  };
  add(file, "prompt_tokens");
  const h5::Group rows = file.open_group("rows");
  for (const std::string& name : rows.children()) add(rows, name);
  const h5::Group taps = file.open_group("taps");
  for (const std::string& layer : taps.children()) {
    const h5::Group group = taps.open_group(layer);
    for (const std::string& op : group.children()) add(group, op);
  }
  return ranges;
}

// Offsets of the file's metadata: bytes outside every dataset's raw data and outside runs of 64 or
// more zero bytes (the unused tail of a chunk index node, space that nothing reads).
std::vector<std::size_t> metadata_offsets(const std::string& path, const std::string& bytes) {
  std::vector<bool> skip(bytes.size(), false);
  for (const auto& [address, size] : raw_data_ranges(path))
    for (hsize_t i = address; i < address + size && i < bytes.size(); ++i) skip[i] = true;
  for (std::size_t i = 0; i < bytes.size();) {
    std::size_t end = i;
    while (end < bytes.size() && bytes[end] == 0) ++end;
    if (end - i >= 64)
      std::fill(skip.begin() + static_cast<std::ptrdiff_t>(i), skip.begin() + static_cast<std::ptrdiff_t>(end), true);
    i = end + 1;
  }
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (!skip[i]) offsets.push_back(i);
  return offsets;
}

struct Outcome {
  int exit_code = 0;
  std::string output;
};

// Changes 1 to 3 metadata bytes of original (seeded), writes the result to path and inspects it.
Outcome inspect_mutation(const std::string& original, const std::vector<std::size_t>& offsets, unsigned seed,
                         const std::string& path) {
  std::mt19937 rng(seed);
  std::string bytes = original;
  const int n = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) {
    const std::size_t at = offsets[rng() % offsets.size()];
    bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + rng() % 255));
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const CommandResult r = run_command(fmt::format("timeout -s KILL 60 '{}' inspect '{}'", TAPDIFF_BINARY, path));
  return {r.exit_code, r.output};
}

TEST(DumpMutation, DamagedMetadataIsReadOrRefusedWithExit2NeverACrashOrAHang) {
  constexpr unsigned kMutations = 300;
  const std::string original_path = dump_path("original.h5");
  dumps::RunMetadata metadata = fake_metadata(fake_config());
  metadata.created = "2024-05-01T12:34:56Z";  // the same bytes at every run: the same mutations
  write_fake_dump(original_path, dumps::StorageType::f32, "layers", model::Scalar::f32, metadata);
  const std::string original = read_bytes(original_path);
  const std::vector<std::size_t> offsets = metadata_offsets(original_path, original);
  ASSERT_GT(offsets.size(), 2000u);
  int read = 0, refused = 0;
  std::vector<std::string> bad;
  for (unsigned seed = 0; seed < kMutations; ++seed) {
    const std::string path = dump_path(fmt::format("mutation-{}.h5", seed));
    const Outcome o = inspect_mutation(original, offsets, seed, path);
    const std::string error = "tapdiff: error: ";
    const std::size_t at = o.output.find(error);
    const bool one_error = at != std::string::npos && (at == 0 || o.output[at - 1] == '\n') &&
                           o.output.find(error, at + 1) == std::string::npos;
    if (o.exit_code == 0) {
      ++read;
      std::filesystem::remove(path);
    } else if (o.exit_code == 2 && one_error && o.output.substr(at + error.size()).starts_with(path + ": ")) {
      ++refused;
      std::filesystem::remove(path);
    } else {
      bad.push_back(fmt::format("seed {}: exit {}: {}", seed, o.exit_code, o.output.substr(0, 300)));
    }
  }
  EXPECT_TRUE(bad.empty()) << bad.size() << " of " << kMutations << " mutations crashed, hung or misreported:\n"
                           << fmt::format("{}", fmt::join(bad, "\n"));
  EXPECT_GT(refused, 0);
  std::cout << "mutations of " << offsets.size() << " metadata bytes: " << read << " read, " << refused << " refused, "
            << bad.size() << " bad\n";
}

}  // namespace
}  // namespace tapdiff::testing
