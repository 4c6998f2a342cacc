// The host's RoPE tables (gpu/rope_table.h): whatever rows were computed before, a table is the
// direct expression's, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/rope_table.h"
#include "model/config.h"

namespace tapdiff::testing {
namespace {

// The expression itself, every pair of every row evaluated on its own.
std::vector<float> direct(int first_pos, int rows, int head_dim, double base) {
  std::vector<float> table;
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < head_dim / 2; ++i) {
      const double angle = static_cast<double>(first_pos + t) * std::pow(base, -2.0 * i / head_dim);
      table.push_back(static_cast<float>(std::cos(angle)));
      table.push_back(static_cast<float>(std::sin(angle)));
    }
  return table;
}

std::vector<float> cached(gpu::RopeTableCache& cache, int first_pos, int rows, int head_dim, double base) {
  std::vector<float> table{1.5f};  // appended after what the table already holds
  model::ModelConfig config;
  config.head_dim = head_dim;
  cache.append(table, first_pos, rows, {head_dim, 0}, model::rope_frequencies(config, 0, base, first_pos + rows));
  EXPECT_EQ(table.front(), 1.5f);
  return {table.begin() + 1, table.end()};
}

TEST(RopeTableCache, RowsAreTheDirectExpressionsWhateverWasComputedBefore) {
  gpu::RopeTableCache cache;
  struct Case {
    int first_pos, rows, head_dim;
    double base;
  };
  const Case cases[] = {
      {0, 300, 128, 500000.0},    // computes positions 0 .. 299
      {40, 17, 128, 500000.0},    // inside them
      {290, 100, 128, 500000.0},  // past them: grows
      {0, 1, 128, 500000.0},      // the first again
      {7, 9, 64, 10000.0},        // another head_dim and base: rows of their own
      {7, 9, 128, 10000.0},       // another base
      {7, 9, 128, 50000000.0},    // base x 100, as the rope-base fault plants it
      {-3, 8, 128, 500000.0},     // positions before 0 (a shifted table)
      {-9, 4, 128, 500000.0},     // only before 0
      {1999, 1, 64, 10000.0},     // far past what was computed
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "positions " << c.first_pos << " + " << c.rows << ", d " << c.head_dim
                                      << ", base " << c.base);
    EXPECT_EQ(cached(cache, c.first_pos, c.rows, c.head_dim, c.base), direct(c.first_pos, c.rows, c.head_dim, c.base));
  }
}

TEST(RopeTableCache, NoRowsAppendNothing) {
  gpu::RopeTableCache cache;
  EXPECT_TRUE(cached(cache, 5, 0, 128, 10000.0).empty());
  EXPECT_TRUE(cached(cache, -5, 0, 128, 10000.0).empty());
}

// Partial rotary: the pairs past rotary_dim / 2 are (1, 0); the attention factor scales the others.
TEST(RopeTableCache, PassingPairsAreIdentityAndTheAttentionFactorScalesTheRest) {
  gpu::RopeTableCache cache;
  const model::RopeFrequencies f{{0.5, 0.25}, 1.25, std::nullopt, {}};
  std::vector<float> table;
  cache.append(table, 3, 2, {8, 0}, f);  // head_dim 8: 4 pairs, 2 of them rotating
  ASSERT_EQ(table.size(), 16u);
  for (int t = 0; t < 2; ++t) {
    const float* row = table.data() + 8 * t;
    for (int i = 0; i < 2; ++i) {
      const double angle = (3 + t) * f.inv_freq[static_cast<std::size_t>(i)];
      EXPECT_EQ(row[2 * i], static_cast<float>(std::cos(angle) * 1.25));
      EXPECT_EQ(row[2 * i + 1], static_cast<float>(std::sin(angle) * 1.25));
    }
    EXPECT_EQ(std::vector<float>(row + 4, row + 8), (std::vector<float>{1, 0, 1, 0}));
  }
}

// Latent attention's q: the pairs of the no-RoPE channels pass before the rotated ones, and a row
// of that layout is not one of the same width without them.
TEST(RopeTableCache, LeadPairsPassBeforeTheRotatedOnes) {
  gpu::RopeTableCache cache;
  const model::RopeFrequencies f{{0.5, 0.25}, 1.0, std::nullopt, {}};
  std::vector<float> plain, led;
  cache.append(plain, 2, 1, {10, 0}, f);
  cache.append(led, 2, 1, {10, 3}, f);  // 5 pairs: 3 passing, 2 rotating
  ASSERT_EQ(led.size(), 10u);
  EXPECT_EQ(std::vector<float>(led.begin(), led.begin() + 6), (std::vector<float>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(std::vector<float>(led.begin() + 6, led.end()), std::vector<float>(plain.begin(), plain.begin() + 4));
  EXPECT_EQ(led[6], static_cast<float>(std::cos(2 * 0.5)));
}

}  // namespace
}  // namespace tapdiff::testing
