// Dumps of outside engines as safetensors and .npz (dumps/imported_dump.h): values read back as
// written, rows by step, fused and halved arrays, q/k channel orders, and a clear error for each
// bad input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dumps/dump_reader.h"
#include "dumps/imported_dump.h"
#include "dumps/safetensors_writer.h"
#include "formats/family_spec.h"
#include "model/errors.h"
#include "tests/model_file_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff {
namespace {

namespace fs = std::filesystem;
using dumps::ImportedDump;
using dumps::ImportOptions;
using model::Op;
using testing::Npy;
using testing::npy;
using testing::write_npz;

model::ModelConfig small_config() {
  model::ModelConfig c;
  c.n_layers = 2, c.dim = 8, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 4, c.ffn_dim = 12, c.vocab = 16;
  return c;
}

ImportOptions options_for(const model::ModelConfig& c, std::string_view map = "tapdiff") {
  ImportOptions o;
  o.map = dumps::preset_map(map);
  o.model_config = model::to_json(c);
  return o;
}

std::vector<float> iota(std::size_t n, float from) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

Npy tokens(std::vector<std::int64_t> ids) {
  const auto n = static_cast<std::int64_t>(ids.size());
  return npy("input_ids", "<i8", {n}, ids);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spill(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string import_error(const fs::path& path, const ImportOptions& options, const model::ModelConfig& c) {
  try {
    const ImportedDump dump(path, options, c);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ImportedDump, NpzAndSafetensorsReadBackAsWritten) {
  const auto dir = testing::temp_dir("imported-basic");
  const model::ModelConfig c = small_config();
  const std::vector<float> norm = iota(3 * 8, 0.5f);
  std::vector<double> q(3 * 8);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = 0.25 * static_cast<double>(i);
  write_npz(dir / "a.npz",
            {tokens({1, 2, 3}), npy("0/attn_norm", "<f4", {3, 8}, norm), npy("1/q_proj", "<f8", {1, 3, 2, 4}, q)});
  write_npz(dir / "deflated.npz",
            {tokens({1, 2, 3}), npy("0/attn_norm", "<f4", {3, 8}, norm), npy("1/q_proj", "<f8", {1, 3, 2, 4}, q)},
            true);
  const ImportedDump deflated(dir / "deflated.npz", options_for(c), c);  // np.savez_compressed
  EXPECT_EQ(deflated.read({Op::q_proj, 1}, 2, 1).at(0, 5), 0.25 * 21);
  const ImportedDump dump(dir / "a.npz", options_for(c), c);
  ASSERT_EQ(dump.rows(), 3);
  // An f32 tap beside an f64 one: held to the coarser's tolerances, and the note says which are which.
  EXPECT_EQ(dump.storage_dtype(), "f32");
  EXPECT_EQ(dump.storage_dtype({Op::attn_norm, 0}), "f32");
  EXPECT_EQ(dump.storage_dtype({Op::q_proj, 1}), "f64");
  EXPECT_TRUE(std::any_of(dump.notes().begin(), dump.notes().end(), [](const std::string& n) {
    return n.find("taps stored in mixed types, 1 f32 (0/attn_norm); 1 f64 (1/q_proj)") != std::string::npos;
  })) << fmt::format("{}", fmt::join(dump.notes(), "\n"));
  EXPECT_EQ(dump.tokens(), (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(dump.positions(), (std::vector<std::int32_t>{0, 1, 2}));
  ASSERT_EQ(dump.tensors().size(), 2u);
  EXPECT_EQ(dump.tensors()[0], (model::TensorId{Op::attn_norm, 0}));
  const model::HostTensor n = dump.read({Op::attn_norm, 0}, 1, 2);
  EXPECT_EQ(n.rows(), 2);
  EXPECT_EQ(n.at(0, 0), 8.5);
  EXPECT_EQ(n.at(1, 7), 23.5);
  const model::HostTensor qr = dump.read({Op::q_proj, 1}, 0, 3);
  EXPECT_EQ(qr.scalar(), model::Scalar::f64);
  EXPECT_EQ(qr.at(2, 5), 0.25 * 21);
  ASSERT_EQ(dump.notes().size(), 3u);
  EXPECT_NE(dump.notes()[0].find("no positions array (positions, position_ids): rows taken as positions 0, 1"),
            std::string::npos);
  EXPECT_NE(dump.notes()[1].find("no decode array (decode) in it: those rows taken as prefill rows"),
            std::string::npos);

  std::vector<testing::StEntry> st = {{"input_ids", "I32", {3}, {}}, {"0/attn_norm", "F32", {3, 8}, {}}};
  const std::vector<std::int32_t> ids = {1, 2, 3};
  st[0].data.resize(12), std::memcpy(st[0].data.data(), ids.data(), 12);
  st[1].data.resize(norm.size() * 4), std::memcpy(st[1].data.data(), norm.data(), norm.size() * 4);
  testing::write_safetensors(dir / "a.safetensors", st);
  const ImportedDump same(dir / "a.safetensors", options_for(c), c);
  EXPECT_EQ(same.read({Op::attn_norm, 0}, 0, 3).at(2, 3), norm[19]);
}

// What `--repro` writes (dumps/safetensors_writer.h) reads back through ArrayFile: each array's type,
// shape and values, the header padded to 8 bytes, and the metadata under __metadata__.
TEST(SafetensorsWriter, ArraysAndMetadataReadBackAsWritten) {
  const auto dir = testing::temp_dir("safetensors-writer");
  const std::vector<float> f32 = iota(6, 0.5f);
  const std::vector<double> f64 = {0.1, -2.5e-300, 7};
  const std::vector<std::int32_t> ids = {3, -1};
  const std::vector<dumps::NamedArray> arrays = {dumps::named_array("input.0/attn_norm", {2, 3}, std::span(f32)),
                                                 dumps::named_array("output.reference", {3, 1}, std::span(f64)),
                                                 dumps::named_array("tokens", {2}, std::span(ids))};
  dumps::write_safetensors(dir / "case.safetensors", "test case", arrays,
                           {{"op", "attn_norm"}, {"note", "a \"quoted\" value"}});
  const dumps::ArrayFile file(dir / "case.safetensors");
  ASSERT_EQ(file.arrays().size(), 3u);
  const dumps::NamedArray* a = file.find("input.0/attn_norm");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, dumps::ElementType::f32);
  EXPECT_EQ(a->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(a->bytes.data(), f32.data(), 24), 0);
  const dumps::NamedArray* r = file.find("output.reference");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type, dumps::ElementType::f64);
  EXPECT_EQ(std::memcmp(r->bytes.data(), f64.data(), 24), 0);
  EXPECT_EQ(file.find("tokens")->type, dumps::ElementType::i32);
  const std::string bytes = slurp(dir / "case.safetensors");
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  EXPECT_EQ(length % 8, 0u);
  const auto header = nlohmann::json::parse(bytes.substr(8, length));
  EXPECT_EQ(header["__metadata__"]["note"], "a \"quoted\" value");
  EXPECT_EQ(header["tokens"]["data_offsets"], (std::vector<std::uint64_t>{48, 56}));
}

TEST(ImportedDump, AFolderIsOneFilePerForwardPassInNumericOrder) {
  const auto dir = testing::temp_dir("imported-folder") / "steps";
  fs::create_directories(dir);
  const model::ModelConfig c = small_config();
  write_npz(dir / "step_10.npz", {tokens({9}), npy("decode", "<i4", {1}, std::vector<std::int32_t>{1}),
                                  npy("0/attn_norm", "<f4", {1, 8}, iota(8, 100))});
  write_npz(dir / "step_9.npz", {tokens({4, 5}), npy("0/attn_norm", "<f4", {2, 8}, iota(16, 0))});
  const ImportedDump dump(dir, options_for(c), c);
  EXPECT_EQ(dump.tokens(), (std::vector<std::int32_t>{4, 5, 9}));
  EXPECT_EQ(dump.chunks(), (std::vector<std::int32_t>{0, 0, 1}));
  EXPECT_EQ(dump.decode_flags(), (std::vector<std::uint8_t>{0, 0, 1}));
  EXPECT_EQ(dump.positions(), (std::vector<std::int32_t>{0, 1, 2}));
  const model::HostTensor rows = dump.read({Op::attn_norm, 0}, 0, 3);
  EXPECT_EQ(rows.at(1, 0), 8);
  EXPECT_EQ(rows.at(2, 0), 100);
  EXPECT_EQ(dump.format(), "folder of 2 npz files");
  // A numbered series must not skip a number: the rows of the missing step would go uncompared.
  const auto step = [&](const char* name) {
    write_npz(dir / name, {tokens({7}), npy("0/attn_norm", "<f4", {1, 8}, iota(8, 0))});
  };
  step("step_12.npz");
  EXPECT_NE(import_error(dir, options_for(c), c).find("found step_12.npz after step_10.npz: step 11 is missing"),
            std::string::npos)
      << import_error(dir, options_for(c), c);
  fs::rename(dir / "step_12.npz", dir / "step_14.npz");
  EXPECT_NE(import_error(dir, options_for(c), c).find("steps 11 to 13 are missing"), std::string::npos)
      << import_error(dir, options_for(c), c);
  fs::remove(dir / "step_14.npz");
  step("step_010.npz");
  EXPECT_NE(import_error(dir, options_for(c), c)
                .find("expected one step file per number, found two numbered 10 (step_010.npz and step_10.npz)"),
            std::string::npos)
      << import_error(dir, options_for(c), c);
}

// qkv split by columns, the layer's output summed from two halves, q/k read from Hugging Face's
// rotate-half order into an interleaved model's.
TEST(ImportedDump, FusedArraysSplitHalvesSumAndQkChannelsFollowTheModel) {
  const auto dir = testing::temp_dir("imported-transforms");
  const model::ModelConfig c = small_config();  // interleaved RoPE, as a GGUF Llama
  const int q = 8, kv = 4;
  std::vector<float> qkv = iota(2 * (q + 2 * kv), 0);
  write_npz(dir / "v.npz", {tokens({1, 2}), npy("model.layers.1.self_attn.qkv_proj.0", "<f4", {2, q + 2 * kv}, qkv),
                            npy("model.layers.0.0", "<f4", {2, 8}, iota(16, 1)),
                            npy("model.layers.0.1", "<f4", {2, 8}, iota(16, 10))});
  const ImportedDump dump(dir / "v.npz", options_for(c, "vllm"), c);
  const model::HostTensor k = dump.read({Op::k_proj, 1}, 0, 2);
  // Row 0's k is columns 8..11 of the fused row in rotate-half order (a0 a1 b0 b1); the model
  // pairs (0,1) and (2,3): channel 1 is the dump's channel 2.
  EXPECT_EQ(k.at(0, 0), 8);
  EXPECT_EQ(k.at(0, 1), 10);
  EXPECT_EQ(k.at(0, 2), 9);
  EXPECT_EQ(k.at(0, 3), 11);
  const model::HostTensor v = dump.read({Op::v_proj, 1}, 1, 1);
  EXPECT_EQ(v.at(0, 0), static_cast<float>(16 + 12));  // not permuted
  const model::HostTensor sum = dump.read({Op::ffn_residual, 0}, 0, 2);
  EXPECT_EQ(sum.at(1, 2), (1 + 10) + (10 + 10));
  // A second half without its first is not compared, and the note names it.
  write_npz(dir / "half.npz", {tokens({1, 2}), npy("model.layers.0.1", "<f4", {2, 8}, iota(16, 10))});
  const ImportedDump half(dir / "half.npz", options_for(c, "vllm"), c);
  EXPECT_TRUE(half.tensors().empty());
  ASSERT_FALSE(half.notes().empty());
  EXPECT_NE(half.notes().back().find("does not know, not compared: model.layers.0.1"), std::string::npos)
      << half.notes().back();
}

TEST(ImportedDump, BadInputsAreNamedWithWhatWasExpected) {
  const auto dir = testing::temp_dir("imported-bad");
  const model::ModelConfig c = small_config();
  const auto opts = options_for(c);
  struct Case {
    std::vector<Npy> arrays;
    std::string expected;
  };
  Npy fortran = npy("0/attn_norm", "<f4", {2, 8}, iota(16, 0));
  fortran.fortran = true;
  const std::vector<Case> cases = {
      {{npy("0/attn_norm", "<f4", {2, 8}, iota(16, 0))},
       "expected the token ids of its rows, an integer array named tokens or input_ids, found none"},
      {{tokens({1, 2}), npy("0/attn_norm", "<f4", {2, 9}, iota(18, 0))},
       "'0/attn_norm' has shape [2, 9]: expected 2 rows (the step's token ids) of width 8"},
      {{tokens({1, 2}), fortran}, "expected a C-ordered array, found fortran_order True"},
      {{tokens({1, 2}), npy("0/attn_norm", "<i4", {2, 8}, std::vector<std::int32_t>(16))},
       "'0/attn_norm': expected floats (f16, bf16, f32, f64), found <i4"},
      {{tokens({1, 2}), npy("0/q_norm", "<f4", {2, 8}, iota(16, 0))},
       "'0/q_norm': maps to 0/q_norm (map 'tapdiff'), which this model does not compute"},
      {{npy("input_ids", "<f4", {2}, iota(2, 0))}, "'input_ids': expected integers (int32 or int64), found <f4"},
      {{tokens({1, 2}), npy("positions", "<i8", {3}, std::vector<std::int64_t>{0, 1, 2})},
       "'positions' has 3 entries for 2 token ids"},
      {{tokens({1, 2}), npy("decode", "<i8", {2}, std::vector<std::int64_t>{0, 2})},
       "'decode' holds 2 at row 1: expected 0 (a prefill row) or 1 (a decode row)"},
      {{tokens({1, 2}), npy("decode", "<i4", {2}, std::vector<std::int32_t>{-1, 0})}, "'decode' holds -1 at row 0"},
      {{tokens({1, 16})}, "'input_ids' row 1: expected token ids in [0, 16) (the model's vocabulary), found 16"},
      {{npy("tokens", "<i8", {2}, std::vector<std::int64_t>{1, 3}), tokens({1, 2})},
       "'tokens' and 'input_ids' both give the rows' token ids: expected equal arrays, found different ones"},
  };
  for (const Case& k : cases) {
    write_npz(dir / "bad.npz", k.arrays);
    const std::string message = import_error(dir / "bad.npz", opts, c);
    EXPECT_NE(message.find(k.expected), std::string::npos) << message;
    EXPECT_NE(message.find((dir / "bad.npz").string()), std::string::npos) << message;
  }
  // A name the map does not know is noted escaped: it cannot forge a line of the output.
  write_npz(dir / "forged.npz", {tokens({1, 2}), npy("x\x1b[2J\nnote: all clear", "<f4", {2, 8}, iota(16, 0))});
  const ImportedDump forged(dir / "forged.npz", opts, c);
  ASSERT_FALSE(forged.notes().empty());
  EXPECT_NE(forged.notes().back().find("not compared: x\\x1b[2J\\nnote: all clear"), std::string::npos)
      << forged.notes().back();
  // Cut short: every offset is checked against the file's size.
  write_npz(dir / "cut.npz", {tokens({1, 2}), npy("0/attn_norm", "<f4", {2, 8}, iota(16, 0))});
  fs::resize_file(dir / "cut.npz", fs::file_size(dir / "cut.npz") - 30);
  EXPECT_NE(import_error(dir / "cut.npz", opts, c)
                .find("expected a zip archive (.npz), found no end of central "
                      "directory"),
            std::string::npos);
  // A deflated member whose directory entry claims 4 GB (found by fuzz_imported_dump: it was
  // allocated before inflating).
  write_npz(dir / "claims.npz", {tokens({1, 2})}, true);
  std::string bytes = slurp(dir / "claims.npz");
  const std::size_t entry = bytes.find("PK\x01\x02");
  ASSERT_NE(entry, std::string::npos);
  const std::uint32_t huge = 0xF0000000u;
  std::memcpy(bytes.data() + entry + 24, &huge, 4);
  spill(dir / "claims.npz", bytes);
  EXPECT_NE(import_error(dir / "claims.npz", opts, c).find("declares 4026531840 bytes inflated from"),
            std::string::npos);
  // One flipped bit in a stored member's data: the CRC-32 names the damage (it read as the
  // engine's divergence before).
  write_npz(dir / "flipped.npz", {tokens({1, 2}), npy("0/attn_norm", "<f4", {2, 8}, iota(16, 1))});
  bytes = slurp(dir / "flipped.npz");
  bytes[bytes.find("0/attn_norm.npy") + 15 + 64 + 7] ^= 0x40;  // an exponent bit of the second float
  spill(dir / "flipped.npz", bytes);
  EXPECT_NE(import_error(dir / "flipped.npz", opts, c).find("member '0/attn_norm.npy': expected data of CRC-32"),
            std::string::npos)
      << import_error(dir / "flipped.npz", opts, c);
  // Two directory entries that share one member's bytes (a zip bomb inflates one stream many times
  // so): refused before anything is inflated.
  write_npz(dir / "shared.npz", {tokens({1, 2}), npy("0/attn_norm", "<f4", {2, 8}, iota(16, 1))}, true);
  bytes = slurp(dir / "shared.npz");
  const std::size_t second = bytes.find("PK\x01\x02", bytes.find("PK\x01\x02") + 4);
  ASSERT_NE(second, std::string::npos);
  std::memset(bytes.data() + second + 42, 0, 4);  // its local header: the first member's
  spill(dir / "shared.npz", bytes);
  EXPECT_NE(import_error(dir / "shared.npz", opts, c).find("overlap those of member 'input_ids.npy'"),
            std::string::npos)
      << import_error(dir / "shared.npz", opts, c);
  // A tap that some step lacks.
  fs::create_directories(dir / "steps");
  write_npz(dir / "steps" / "0.npz", {tokens({1, 2}), npy("0/attn_norm", "<f4", {2, 8}, iota(16, 0))});
  write_npz(dir / "steps" / "1.npz", {tokens({3})});
  EXPECT_NE(import_error(dir / "steps", opts, c)
                .find("0/attn_norm holds 2 of the dump's 3 rows: a tap must be in "
                      "every step file"),
            std::string::npos);
  // Entries named like steps that are none: refused by name, never skipped (a step's rows would be
  // missing) nor an internal error (a looping link threw from the directory walk).
  fs::create_directories(dir / "odd");
  write_npz(dir / "odd" / "0.npz", {tokens({1, 2}), npy("0/attn_norm", "<f4", {2, 8}, iota(16, 0))});
  fs::create_directories(dir / "odd" / "1.npz");
  fs::create_symlink("2.npz", dir / "odd" / "2.npz");
  fs::copy_file(dir / "odd" / "0.npz", dir / "odd" / "3.NPZ");
  const std::string odd = import_error(dir / "odd", opts, c);
  EXPECT_NE(odd.find("expected every entry named like a step to be a .safetensors or .npz file, found 1.npz (not a "
                     "regular file), 2.npz (Too many levels of symbolic links), 3.NPZ (the extension spelt .NPZ, not "
                     ".npz)"),
            std::string::npos)
      << odd;
}

// An attention's [batch, heads, rows, head_dim]: read where the map says so, and named where it does not.
TEST(ImportedDump, PerHeadArraysHeldHeadsFirstAreReadWhereTheMapSaysSo) {
  const auto dir = testing::temp_dir("imported-heads-first");
  const model::ModelConfig c = small_config();  // 2 heads of 4 for q, 1 for k
  // rope_q of 3 rows as [1, 2, 3, 4]: element (h, r, d) is 100 h + 10 r + d.
  std::vector<float> q;
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < 3; ++r)
      for (int d = 0; d < 4; ++d) q.push_back(static_cast<float>(100 * h + 10 * r + d));
  write_npz(dir / "a.npz",
            {tokens({1, 2, 3}), npy("0/rope_q", "<f4", {1, 2, 3, 4}, q),
             npy("0/rope_k", "<f4", {1, 1, 3, 4}, iota(12, 0)), npy("0/attn_norm", "<f4", {1, 3, 8}, iota(24, 0))});
  fs::path map = dir / "heads.toml";
  spill(map, "base = \"tapdiff\"\nheads_first = true\n");
  ImportOptions heads = options_for(c);
  heads.map = dumps::map_from_toml(map);
  const ImportedDump dump(dir / "a.npz", heads, c);
  const model::HostTensor rq = dump.read({Op::rope_q, 0}, 1, 2);  // rows 1 and 2
  EXPECT_EQ(rq.at(0, 0), 10);
  EXPECT_EQ(rq.at(0, 5), 111);  // head 1, channel 1
  EXPECT_EQ(rq.at(1, 7), 123);
  EXPECT_EQ(dump.read({Op::rope_k, 0}, 2, 1).at(0, 3), 11);
  EXPECT_EQ(dump.read({Op::attn_norm, 0}, 2, 1).at(0, 7), 23);  // not per head: rows first as ever
  EXPECT_NE(import_error(dir / "a.npz", options_for(c), c)
                .find("'0/rope_q' has shape [1, 2, 3, 4]: expected 3 rows (the step's token ids) of width 8 (held "
                      "heads first, [heads, rows, head_dim]? a TOML map with heads_first = true reads it)"),
            std::string::npos)
      << import_error(dir / "a.npz", options_for(c), c);
}

// moe_ids compares by place: a row in the engine's own top-k order would read as other experts.
TEST(ImportedDump, ExpertIdsOutOfAscendingOrderAreRefusedNamingTheRow) {
  const auto dir = testing::temp_dir("imported-moe-order");
  model::ModelConfig c = small_config();
  c.experts.count = 4, c.experts.active = 2, c.experts.ffn_dim = 6;
  const auto opts = options_for(c);
  const auto ids = [](std::vector<float> values) { return npy("0/moe_ids", "<f4", {3, 2}, values); };
  write_npz(dir / "sorted.npz", {tokens({1, 2, 3}), ids({0, 3, 1, 2, 2, 3})});
  EXPECT_EQ(ImportedDump(dir / "sorted.npz", opts, c).read({Op::moe_ids, 0}, 1, 1).f32()[1], 2.0f);
  write_npz(dir / "by-weight.npz", {tokens({1, 2, 3}), ids({0, 3, 2, 1, 2, 3})});
  const std::string message = import_error(dir / "by-weight.npz", opts, c);
  EXPECT_NE(message.find((dir / "by-weight.npz").string() +
                         ": 0/moe_ids at row 1 (position 1) holds experts [2, 1]: expected ids ascending"),
            std::string::npos)
      << message;
  write_npz(dir / "twice.npz", {tokens({1, 2, 3}), ids({0, 3, 1, 1, 2, 3})});
  EXPECT_NE(import_error(dir / "twice.npz", opts, c).find("holds experts [1, 1]"), std::string::npos);
}

// llama.cpp's top-k is in the order of the scores: moe_ids is read sorted ascending, and the weights
// of each row in the same order; the weights it takes are the normalized ones where the experts'
// are normalized. Without the ids beside them, the weights are refused, naming them.
TEST(ImportedDump, ExpertIdsInChoiceOrderAreReadSortedWithTheirWeights) {
  const auto dir = testing::temp_dir("imported-moe-choice-order");
  model::ModelConfig c = small_config();
  c.family = model::Family::qwen3_moe;
  c.experts.count = 4, c.experts.active = 2, c.experts.ffn_dim = 6, c.experts.normalize = true;
  const auto opts = options_for(c, "llama.cpp");
  const auto array = [](std::string name, std::vector<float> values) {
    return npy(std::move(name), "<f4", {2, 2}, values);
  };
  write_npz(dir / "a.npz", {tokens({1, 2}), array("ffn_moe_topk-1", {3, 0, 1, 2}),
                            array("ffn_moe_weights_norm-1", {0.75f, 0.25f, 0.6f, 0.4f}),
                            array("ffn_moe_weights-1", {0.3f, 0.1f, 0.3f, 0.2f})});
  const ImportedDump dump(dir / "a.npz", opts, c);
  const model::HostTensor ids = dump.read({Op::moe_ids, 1}, 0, 2), weights = dump.read({Op::moe_weights, 1}, 0, 2);
  EXPECT_EQ(std::vector<float>(ids.f32().begin(), ids.f32().end()), (std::vector<float>{0, 3, 1, 2}));
  EXPECT_EQ(std::vector<float>(weights.f32().begin(), weights.f32().end()),
            (std::vector<float>{0.25f, 0.75f, 0.6f, 0.4f}));
  EXPECT_TRUE(std::any_of(dump.notes().begin(), dump.notes().end(), [](const std::string& n) {
    return n.find("the map 'llama.cpp' does not know, not compared: ffn_moe_weights-1") != std::string::npos;
  })) << fmt::format("{}", fmt::join(dump.notes(), "\n"));
  write_npz(dir / "alone.npz", {tokens({1, 2}), array("ffn_moe_weights_norm-1", {0.75f, 0.25f, 0.6f, 0.4f})});
  EXPECT_NE(import_error(dir / "alone.npz", opts, c)
                .find("'ffn_moe_weights_norm-1': it is read in the order of the expert ids 'ffn_moe_topk-1', which is "
                      "absent"),
            std::string::npos);
}

TEST(ImportedDump, UserMapsInTomlAreCheckedKeyByKey) {
  const auto dir = testing::temp_dir("imported-toml");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[taps]\n\"x.{L}\" = \"q_prj\"\n", "'taps.\"x.{L}\"': expected an op name (docs/dump-format.md), found 'q_prj'"},
      {"base = \"candle\"\n", "--map candle: expected one of tapdiff, hf, vllm, llama.cpp"},
      {"layers = 3\n",
       "'layers': expected base, layout, heads_first, tokens, positions, decode, [taps], [sums] or [orders], "
       "found an unknown"},
      {"[orders]\n\"w.{L}\" = \"ids.{L}\"\n",
       "'orders.\"w.{L}\"': expected the name of an array the map reads as one op, found another name"},
      {"[taps]\n\"w.{L}\" = \"moe_weights\"\n[orders]\n\"w.{L}\" = 3\n",
       "'orders.\"w.{L}\"': expected the name of an array of expert ids, found another type"},
      {"heads_first = \"yes\"\n", "'heads_first': expected true or false, found another type"},
      {"[sums]\nffn_residual = [\"a.{L}\"]\n", "'sums.ffn_residual': expected two names, found 1"},
      {"layout = \"neox\"\n", "'layout': expected rotate_half, interleaved or model, found 'neox'"},
      {"[taps\n", "expected a TOML name map, found a parse error"},
      // toml++ reaches __builtin_unreachable on some non-ASCII bytes (found by fuzz_name_map).
      {"\xef\xbb\xb7kern = 1\n", "map.toml:1:1: expected ASCII outside comments, found the byte 0xef"},
      {"tokens = [\"ids\", 3]\n", "'tokens': expected an array of names (strings), found an item of another type"},
      // Keys and headers nested through their dots (toml++ recurses once per part): refused by
      // the pre-scan, where the file says, before toml++ sees them.
      {"a" + repeat(".a", 30000) + " = 1\n", "map.toml:1:1: expected a TOML key of at most 64 parts, found more"},
      {"x = 1\n[[a" + repeat(".a", 30000) + "]]\n", "map.toml:2:3: expected a TOML key of at most 64 parts"},
      {"x = { y = 2, b" + repeat(".b", 30000) + " = 1 }\n", "map.toml:1:14: expected a TOML key of at most 64"},
  };
  for (const auto& [text, expected] : cases) {
    std::ofstream(dir / "map.toml") << text;
    std::string message = "(no error)";
    try {
      dumps::map_from_toml(dir / "map.toml");
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  std::ofstream(dir / "map.toml") << "base = \"hf\"\ntokens = \"ids\"\n[taps]\n\"blk.{L}.q\" = \"q_proj\"\n";
  const dumps::NameMap m = dumps::map_from_toml(dir / "map.toml");
  const model::ModelConfig c = small_config();
  const auto mine = dumps::resolve(m, "blk.1.q", c);
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->ids.front(), (model::TensorId{Op::q_proj, 1}));
  EXPECT_TRUE(dumps::resolve(m, "model.layers.0.mlp.down_proj", c).has_value());  // the base's rules stay
  EXPECT_FALSE(dumps::resolve(m, "blk.2.q", c).has_value());                      // past the last layer
  EXPECT_EQ(m.tokens, std::vector<std::string>{"ids"});
  // [orders]: the ids array that sorts an array's rows, with the layer filled in.
  std::ofstream(dir / "orders.toml") << "[taps]\n\"w.{L}\" = \"moe_weights\"\n[orders]\n\"w.{L}\" = \"ids.{L}\"\n";
  model::ModelConfig moe = small_config();
  moe.experts.count = 4, moe.experts.active = 2, moe.experts.ffn_dim = 6;
  const auto ordered = dumps::resolve(dumps::map_from_toml(dir / "orders.toml"), "w.1", moe);
  ASSERT_TRUE(ordered.has_value());
  EXPECT_EQ(ordered->order, "ids.1");

  // Dots inside quoted names, strings and comments are no key parts; 100,000 rules load in one
  // pass, the last of two for a name winning.
  std::string many = "# a.b.c.d" + repeat(".e", 100) + "\n[taps]\n";
  for (int i = 0; i < 100000; ++i) many += fmt::format("\"n{}.{{L}}.{}\" = \"q_proj\"\n", i, repeat(".", 70));
  many += "[sums]\nffn_residual = [\"x" + repeat(".x", 80) + "\", \"y\"]\n";
  std::ofstream(dir / "many.toml") << many;
  const dumps::NameMap big = dumps::map_from_toml(dir / "many.toml");
  const auto last = dumps::resolve(big, fmt::format("n99999.1.{}", repeat(".", 70)), c);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->ids.front(), (model::TensorId{Op::q_proj, 1}));
}

// llama.cpp's names per family: Gemma scales its embedding after "embd" ("inp_scaled"); Phi-3
// multiplies by q, k, v as one matrix ("wqkv") and by gate and up as one ("ffn_up"), names q
// "Qcur" again once scaled and has a view for "Vcur"; the others read "embd", "Qcur", "Vcur".
TEST(ImportedDump, TheLlamaCppMapReadsEachFamilysNames) {
  const dumps::NameMap m = dumps::preset_map("llama.cpp");
  const auto ops = [&](std::string_view name, const std::string& arch) {
    model::ModelConfig c = small_config();
    c.family = *formats::family_named(arch);
    if (c.family == model::Family::deepseek_v3) c.mla.kv_rank = 8;  // latent attention
    std::vector<model::TensorId> ids;
    if (const auto r = dumps::resolve(m, name, c)) ids = r->ids;
    return ids;
  };
  using Ids = std::vector<model::TensorId>;
  EXPECT_EQ(ops("embd", "llama"), (Ids{{Op::embed, -1}}));
  EXPECT_EQ(ops("embd", "gemma2"), Ids{});
  EXPECT_EQ(ops("inp_scaled", "gemma2"), (Ids{{Op::embed, -1}}));
  EXPECT_EQ(ops("wqkv-1", "phi3"), (Ids{{Op::q_proj, 1}, {Op::k_proj, 1}, {Op::v_proj, 1}}));
  EXPECT_EQ(ops("ffn_up-1", "phi3"), (Ids{{Op::ffn_gate, 1}, {Op::ffn_up, 1}}));
  EXPECT_EQ(ops("Qcur-1", "phi3"), Ids{});
  EXPECT_EQ(ops("Vcur-1", "phi3"), Ids{});
  EXPECT_EQ(ops("Kcur-1", "phi3"), (Ids{{Op::rope_k, 1}}));
  EXPECT_EQ(ops("ffn_up-1", "qwen3"), (Ids{{Op::ffn_up, 1}}));
  EXPECT_EQ(ops("Qcur-1", "qwen3"), (Ids{{Op::rope_q, 1}}));
  EXPECT_EQ(ops("Vcur-1", "qwen3"), (Ids{{Op::v_proj, 1}}));
  // DeepSeek's absorbed latent attention: names of its own; its Qcur, Kcur and Vcur, the latent
  // space's, unread; those names mean nothing in another family's graph.
  EXPECT_EQ(ops("q-1", "deepseek2"), (Ids{{Op::q_proj, 1}}));
  EXPECT_EQ(ops("kv_cmpr_pe-1", "deepseek2"), (Ids{{Op::kv_a_proj, 1}}));
  EXPECT_EQ(ops("kv_cmpr-1", "deepseek2"), (Ids{{Op::kv_a_norm, 1}}));
  EXPECT_EQ(ops("k_pe-1", "deepseek2"), (Ids{{Op::rope_k, 1}}));
  for (const std::string_view absorbed : {"Qcur-1", "Kcur-1", "Vcur-1"}) EXPECT_EQ(ops(absorbed, "deepseek2"), Ids{});
  EXPECT_EQ(ops("q-1", "qwen3"), Ids{});
  // Its q/k channels are read in the model's own order, under hf as under a TOML map, which may not
  // state another.
  model::ModelConfig deepseek = small_config();  // interleaved
  deepseek.family = model::Family::deepseek_v3;
  deepseek.mla.kv_rank = 8;
  EXPECT_EQ(dumps::values_layout(dumps::preset_map("hf"), deepseek), std::nullopt);
  dumps::NameMap half = dumps::preset_map("tapdiff");
  half.layout = model::RopeStyle::rotate_half;
  EXPECT_THROW(dumps::values_layout(half, deepseek), UsageError);
  // Another family's graph names its values otherwise (GPT-NeoX's "ffn_out" twice in its parallel
  // block, the second time the FFN's output plus the layer's input): the
  // preset is refused for it, a TOML map of its names is not.
  model::ModelConfig neox = small_config();
  neox.family = model::Family::gpt_neox;
  EXPECT_NO_THROW(dumps::require_map_fits(m, small_config()));
  try {
    dumps::require_map_fits(m, neox);
    ADD_FAILURE() << "expected a refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--map llama.cpp: its names are those of llama, mistral"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("not gpt_neox's"), std::string::npos) << e.what();
  }
  const auto dir = testing::temp_dir("llama-cpp-toml");
  std::ofstream(dir / "neox.toml") << "base = \"llama.cpp\"\n[taps]\n\"ffn_par-{L}\" = \"ffn_down\"\n";
  EXPECT_NO_THROW(dumps::require_map_fits(dumps::map_from_toml(dir / "neox.toml"), neox));
}

// The embed op as a hook sees it: embed_tokens' output where that module returns it (transformers'
// Gemma scales inside it; vLLM's after it), else the first layer's input (GPT-2's positions,
// Granite's multiplier added after it).
TEST(ImportedDump, TheHfMapTakesTheEmbeddingWhereTheModelCompletesIt) {
  const auto ops = [](std::string_view name, const std::string& arch, const auto& edit, std::string_view map = "hf") {
    model::ModelConfig c = small_config();
    c.family = *formats::family_named(arch);
    edit(c.block);
    std::vector<model::TensorId> ids;
    if (const auto r = dumps::resolve(dumps::preset_map(map), name, c)) ids = r->ids;
    return ids;
  };
  using Ids = std::vector<model::TensorId>;
  const auto positions = [](model::Block& b) { b.learned_positions = true; };
  const auto scaled = [](model::Block& b) { b.embed_scale = 8; };
  EXPECT_EQ(ops("transformer.wte", "gpt2", positions), Ids{});
  EXPECT_EQ(ops("transformer.h.0:input", "gpt2", positions), (Ids{{Op::embed, -1}}));
  EXPECT_EQ(ops("model.embed_tokens", "granite", scaled), Ids{});
  EXPECT_EQ(ops("model.layers.0:input", "granite", scaled), (Ids{{Op::embed, -1}}));
  EXPECT_EQ(ops("model.embed_tokens", "gemma", scaled), (Ids{{Op::embed, -1}}));
  EXPECT_EQ(ops("model.layers.0:input", "gemma", scaled), Ids{});
  EXPECT_EQ(ops("model.embed_tokens", "llama", [](model::Block&) {}), (Ids{{Op::embed, -1}}));
  EXPECT_EQ(ops("model.embed_tokens", "gemma", scaled, "vllm"), Ids{});
  EXPECT_EQ(ops(
                "model.embed_tokens", "llama", [](model::Block&) {}, "vllm"),
            (Ids{{Op::embed, -1}}));
}

// The hf and vllm maps read each family's module names as its checkpoints' tensor names are read:
// GPT-2's transformer.h.{L}.attn.c_attn as q, k and v side by side, OPT's decoder, GLM-4's norms
// around each half; vLLM's layer output summed from its two halves under the family's names.
TEST(ImportedDump, TheHfAndVllmMapsReadEachFamilysModuleNames) {
  const auto ops = [](std::string_view map, std::string_view name, const std::string& arch, bool post_norms = false) {
    model::ModelConfig c = small_config();
    c.family = *formats::family_named(arch);
    c.block.post_norms = post_norms;
    std::vector<model::TensorId> ids;
    if (const auto r = dumps::resolve(dumps::preset_map(map), name, c)) ids = r->ids;
    return ids;
  };
  using Ids = std::vector<model::TensorId>;
  EXPECT_EQ(ops("hf", "transformer.h.1.ln_1", "gpt2"), (Ids{{Op::attn_norm, 1}}));
  EXPECT_EQ(ops("hf", "transformer.h.1.attn.c_attn", "gpt2"), (Ids{{Op::q_proj, 1}, {Op::k_proj, 1}, {Op::v_proj, 1}}));
  EXPECT_EQ(ops("hf", "transformer.h.1.attn.c_proj:input", "gpt2"), (Ids{{Op::attn, 1}}));
  EXPECT_EQ(ops("hf", "transformer.h.1.mlp.c_fc", "gpt2"), (Ids{{Op::ffn_up, 1}}));
  EXPECT_EQ(ops("hf", "transformer.h.1", "gpt2"), (Ids{{Op::ffn_residual, 1}}));
  EXPECT_EQ(ops("hf", "transformer.ln_f", "gpt2"), (Ids{{Op::final_norm, 2}}));
  EXPECT_EQ(ops("hf", "model.decoder.layers.0.fc2", "opt"), (Ids{{Op::ffn_down, 0}}));
  EXPECT_EQ(ops("hf", "model.decoder.final_layer_norm", "opt"), (Ids{{Op::final_norm, 2}}));
  EXPECT_EQ(ops("hf", "model.layers.0.post_attention_layernorm", "glm4", true), (Ids{{Op::ffn_norm, 0}}));
  EXPECT_EQ(ops("hf", "model.layers.0.post_self_attn_layernorm", "glm4", true), (Ids{{Op::attn_post_norm, 0}}));
  EXPECT_EQ(ops("hf", "transformer.h.1.attn.c_attn", "llama"), Ids{});  // another family's name
  EXPECT_EQ(ops("vllm", "transformer.h.1.attn.c_attn.0", "gpt2"),
            (Ids{{Op::q_proj, 1}, {Op::k_proj, 1}, {Op::v_proj, 1}}));
  model::ModelConfig c = small_config();
  c.family = model::Family::gpt2;
  const auto sum = dumps::resolve(dumps::preset_map("vllm"), "transformer.h.1.0", c);
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(sum->ids, (Ids{{Op::ffn_residual, 1}}));
  EXPECT_EQ(sum->partner, "transformer.h.1.1");
  EXPECT_TRUE(dumps::is_sum_partner(dumps::preset_map("vllm"), "transformer.h.1.1", c));
}

// Through DumpReader: an imported dump says what it is, and an HDF5 path still opens as before.
TEST(ImportedDump, DumpReaderSaysWhereTheValuesCameFrom) {
  const auto dir = testing::temp_dir("imported-reader");
  const model::ModelConfig c = small_config();
  write_npz(dir / "b.npz", {tokens({1, 2}), npy("positions", "<i4", {2}, std::vector<std::int32_t>{5, 6}),
                            npy("decode", "<i4", {2}, std::vector<std::int32_t>{0, 1}),
                            npy("model.layers.0", "<f2", {2, 8}, std::vector<std::uint16_t>(16, 0x3c00))});
  const dumps::DumpReader reader((dir / "b.npz").string(), options_for(c, "hf"));
  EXPECT_EQ(reader.metadata().engine, "imported npz (map hf)");
  EXPECT_EQ(reader.metadata().storage_dtype, "f16");
  EXPECT_EQ(reader.positions(), (std::vector<std::int32_t>{5, 6}));
  EXPECT_EQ(reader.read({Op::ffn_residual, 0}, 0, 2).at(1, 7), 1.0);
  EXPECT_EQ(reader.decode_flags(), (std::vector<std::uint8_t>{0, 1}));
  EXPECT_TRUE(reader.notes().empty());  // its provenance whole, every array mapped
}

}  // namespace
}  // namespace tapdiff
