// The C API (dumps/tapdiff.h): a dump written through it reads back as written, and every misuse is
// a nonzero return with a message naming what was expected and found, never an abort.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dumps/dump_reader.h"
#include "dumps/tapdiff.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff {
namespace {

std::string contains(const char* text, const std::string& part) {
  return std::string(text).find(part) != std::string::npos ? "" : std::string(text) + " lacks '" + part + "'";
}

TEST(CApi, WritesADumpThatReadsBackAndRefusesMisuseByName) {
  const std::string model = testing::synth_model_path("tiny").string();
  const std::string path = (testing::temp_dir("c-api") / "c.h5").string();
  char error[512] = "";
  EXPECT_EQ(tapdiff_writer_open(path.c_str(), "/no/such/model.gguf", "c", "f32", error, sizeof error), nullptr);
  EXPECT_NE(std::string(error).find("/no/such/model.gguf"), std::string::npos) << error;
  EXPECT_EQ(tapdiff_writer_open(path.c_str(), model.c_str(), "c", "f8", error, sizeof error), nullptr);
  EXPECT_EQ(contains(error, "compute_dtype: expected f32, f16, bf16 or f64, found 'f8'"), "");

  tapdiff_writer* w = tapdiff_writer_open(path.c_str(), model.c_str(), "c", "f32", error, sizeof error);
  ASSERT_NE(w, nullptr) << error;
  const std::vector<std::int32_t> tokens = {1, 5, 9};
  std::vector<float> norm(3 * 64, 0.5f);
  EXPECT_NE(tapdiff_record_f32(w, 0, "attn_norm", norm.data(), 3, 64), 0);
  EXPECT_EQ(contains(tapdiff_writer_error(w), "no chunk is open"), "");
  EXPECT_NE(tapdiff_chunk_begin(w, tokens.data(), 3, nullptr, 1), 0);
  EXPECT_EQ(contains(tapdiff_writer_error(w), "a decode step feeds one token, found 3"), "");
  ASSERT_EQ(tapdiff_chunk_begin(w, tokens.data(), 3, nullptr, 0), 0) << tapdiff_writer_error(w);
  EXPECT_NE(tapdiff_record_f32(w, 0, "attn_nrom", norm.data(), 3, 64), 0);
  EXPECT_EQ(contains(tapdiff_writer_error(w), "'attn_nrom' is not an op name"), "");
  EXPECT_NE(tapdiff_record_f32(w, 0, "attn_norm", norm.data(), 3, 65), 0);
  EXPECT_EQ(contains(tapdiff_writer_error(w),
                     "0/attn_norm: expected [3, 64] (the chunk's rows, the op's width), "
                     "found [3, 65]"),
            "");
  EXPECT_NE(tapdiff_record_f32(w, 0, "q_norm", norm.data(), 3, 64), 0);
  EXPECT_EQ(contains(tapdiff_writer_error(w), "0/q_norm is not an op of this model at that layer"), "");
  EXPECT_EQ(tapdiff_record_f32(w, 0, "attn_norm", norm.data(), 3, 64), 0) << tapdiff_writer_error(w);
  EXPECT_NE(tapdiff_record_f32(w, 0, "attn_norm", norm.data(), 3, 64), 0);
  EXPECT_EQ(contains(tapdiff_writer_error(w), "recorded twice in one chunk"), "");
  ASSERT_EQ(tapdiff_chunk_end(w), 0) << tapdiff_writer_error(w);
  const std::int32_t next = 4;
  ASSERT_EQ(tapdiff_chunk_begin(w, &next, 1, nullptr, 1), 0) << tapdiff_writer_error(w);
  std::vector<float> one(64, 2.0f);
  EXPECT_EQ(tapdiff_record_f32(w, 0, "attn_norm", one.data(), 1, 64), 0);
  EXPECT_NE(tapdiff_writer_finish(w, &next, 1), 0);  // the chunk is open: refused, w freed all the same

  const dumps::DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  ASSERT_EQ(reader.rows(), 3);  // the ended chunk only
  EXPECT_EQ(reader.read({model::Op::attn_norm, 0}, 2, 1).at(0, 63), 0.5);
  EXPECT_EQ(reader.metadata().engine, "c");

  tapdiff_dump* d = tapdiff_dump_open(path.c_str(), error, sizeof error);
  ASSERT_NE(d, nullptr) << error;
  EXPECT_EQ(tapdiff_dump_rows(d), 3);
  std::int32_t token = 0, position = 0, chunk = -1;
  int decode = 1;
  ASSERT_EQ(tapdiff_dump_row(d, 2, &token, &position, &chunk, &decode), 0);
  EXPECT_EQ(token, 9);
  EXPECT_EQ(position, 2);
  EXPECT_EQ(chunk, 0);
  EXPECT_EQ(decode, 0);
  EXPECT_NE(tapdiff_dump_row(d, 3, &token, nullptr, nullptr, nullptr), 0);
  std::vector<float> back(2 * 64);
  EXPECT_NE(tapdiff_dump_read_f32(d, 0, "attn_norm", 2, 2, back.data()), 0);
  EXPECT_EQ(contains(tapdiff_dump_error(d), "rows [2, 4) of 3"), "");
  tapdiff_dump_close(d);
  EXPECT_EQ(tapdiff_dump_open("/no/such.h5", error, sizeof error), nullptr);
  EXPECT_EQ(contains(error, "no such dump file"), "");
}

}  // namespace
}  // namespace tapdiff
