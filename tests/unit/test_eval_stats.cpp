// Test vectors checked against statsmodels (docs/eval.md).
#include <gtest/gtest.h>

#include "upskill/eval/stats.hpp"

namespace upskill::eval::stats {
namespace {

TEST(Wilson, ResearchVectors) {
  const auto a = wilson(17, 20);
  EXPECT_NEAR(a.low, 0.640, 0.0005);
  EXPECT_NEAR(a.high, 0.948, 0.0005);
  const auto b = wilson(5, 5);
  EXPECT_NEAR(b.low, 0.566, 0.0005);
  EXPECT_DOUBLE_EQ(b.high, 1.0);
  const auto zero = wilson(0, 10);
  EXPECT_DOUBLE_EQ(zero.low, 0.0);
  EXPECT_GT(zero.high, 0.25);  // does not collapse at 0% like the Wald interval
  const auto none = wilson(0, 0);
  EXPECT_DOUBLE_EQ(none.low, 0.0);
  EXPECT_DOUBLE_EQ(none.high, 1.0);
}

TEST(McNemar, ExactPValues) {
  EXPECT_NEAR(mcnemar_exact_p(5, 0), 0.0625, 1e-12);  // five clean wins are not yet significant
  EXPECT_NEAR(mcnemar_exact_p(0, 5), 0.0625, 1e-12);
  EXPECT_NEAR(mcnemar_exact_p(6, 0), 0.03125, 1e-12);
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(3, 3), 1.0);
  EXPECT_NEAR(mcnemar_exact_p(8, 2), 0.109375, 1e-12);  // 2 * (1 + 10 + 45) / 1024
  EXPECT_GT(mcnemar_exact_p(500, 480), 0.1);            // large n stays finite
  EXPECT_EQ(min_discordant_for_significance(), 6);
}

TEST(PairedTable, CountsAndLift) {
  PairedTable t;
  t.add(true, true);
  t.add(true, false);
  t.add(true, false);
  t.add(false, true);
  t.add(false, false);
  EXPECT_EQ(t.both, 1);
  EXPECT_EQ(t.with_only, 2);
  EXPECT_EQ(t.without_only, 1);
  EXPECT_EQ(t.neither, 1);
  EXPECT_EQ(t.n(), 5);
  EXPECT_DOUBLE_EQ(t.lift(), 0.2);
  EXPECT_DOUBLE_EQ(PairedTable{}.lift(), 0.0);
}

TEST(PassK, ChenAndTauBench) {
  EXPECT_NEAR(*pass_at_k(10, 3, 1), 0.3, 1e-12);
  EXPECT_NEAR(*pass_at_k(10, 3, 2), 1.0 - 21.0 / 45.0, 1e-12);  // 1 - C(7,2)/C(10,2)
  EXPECT_DOUBLE_EQ(*pass_at_k(3, 2, 2), 1.0);                   // n - c < k
  EXPECT_NEAR(*pass_hat_k(10, 3, 2), 3.0 / 45.0, 1e-12);        // C(3,2)/C(10,2)
  EXPECT_DOUBLE_EQ(*pass_hat_k(3, 3, 3), 1.0);
  EXPECT_DOUBLE_EQ(*pass_hat_k(3, 1, 2), 0.0);
  EXPECT_FALSE(pass_at_k(2, 1, 3));
  EXPECT_FALSE(pass_hat_k(2, 1, 0));
}

TEST(Bootstrap, SeededAndPaired) {
  const std::vector<double> with{1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
  const std::vector<double> without{0, 0, 1, 0, 0, 1, 0, 0, 0, 1};
  const auto a = paired_bootstrap_lift(with, without, 5000, 7);
  const auto b = paired_bootstrap_lift(with, without, 5000, 7);
  EXPECT_DOUBLE_EQ(a.estimate, 0.6);
  EXPECT_DOUBLE_EQ(a.interval.low, b.interval.low);  // same seed, same interval
  EXPECT_DOUBLE_EQ(a.interval.high, b.interval.high);
  EXPECT_GT(a.interval.low, 0.0);  // every discordant case favours the skill
  EXPECT_LE(a.interval.high, 1.0);
  EXPECT_TRUE(a.interval.contains(0.6));
  // No difference anywhere: the interval is the point 0.
  const auto flat = paired_bootstrap_lift({1, 0, 1}, {1, 0, 1}, 1000, 1);
  EXPECT_DOUBLE_EQ(flat.interval.low, 0.0);
  EXPECT_DOUBLE_EQ(flat.interval.high, 0.0);
  // Mixed results straddle 0.
  const auto mixed = paired_bootstrap_lift({1, 0, 1, 0}, {0, 1, 0, 1}, 2000, 3);
  EXPECT_LT(mixed.interval.low, 0.0);
  EXPECT_GT(mixed.interval.high, 0.0);
}

TEST(Upskill, BeneficialAndSavings) {
  EXPECT_DOUBLE_EQ(token_savings(80, 100), 0.2);
  EXPECT_DOUBLE_EQ(token_savings(80, 0), 0.0);
  EXPECT_TRUE(is_beneficial(0.06, 0));
  EXPECT_FALSE(is_beneficial(0.05, 0));
  EXPECT_TRUE(is_beneficial(0.0, 0.21));
  EXPECT_FALSE(is_beneficial(0.0, 0.2));
  EXPECT_FALSE(is_beneficial(-0.01, 0.9));
}

TEST(SmallSample, Warning) {
  ASSERT_TRUE(small_sample_warning(5));
  EXPECT_NE(small_sample_warning(5)->find("at least 6 discordant"), std::string::npos);
  EXPECT_FALSE(small_sample_warning(6));
}

}  // namespace
}  // namespace upskill::eval::stats
