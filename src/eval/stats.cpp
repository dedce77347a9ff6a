// The statistics of small with/without samples: Wilson intervals, the paired table and exact
// McNemar p, pass@k and pass^k, and the seeded paired bootstrap of the lift (see stats.hpp).
#include "upskill/eval/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace upskill::eval::stats {

Interval wilson(long long successes, long long n, double z) {
  return wilson_fractional(static_cast<double>(successes), static_cast<double>(n), z);
}

Interval wilson_fractional(double successes, double nn, double z) {
  if (nn <= 0) return {0, 1};
  const double p = successes / nn;
  const double z2 = z * z;
  const double denom = 1 + z2 / nn;
  const double center = (p + z2 / (2 * nn)) / denom;
  const double half = z / denom * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

double PairedTable::lift() const {
  const long long total = n();
  return total == 0 ? 0.0
                    : static_cast<double>(with_only - without_only) / static_cast<double>(total);
}

void PairedTable::add(bool with_passed, bool without_passed) {
  if (with_passed && without_passed)
    ++both;
  else if (with_passed)
    ++with_only;
  else if (without_passed)
    ++without_only;
  else
    ++neither;
}

double mcnemar_exact_p(long long b, long long c) {
  const long long n = b + c;
  if (n == 0) return 1.0;
  const long long k = std::min(b, c);
  // Sum binomial probabilities in log space so large n stays finite.
  double sum = 0;
  for (long long i = 0; i <= k; ++i) {
    const double log_term =
        std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
        std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * std::log(2.0);
    sum += std::exp(log_term);
  }
  return std::min(1.0, 2 * sum);
}

int min_discordant_for_significance(double alpha) {
  for (int n = 1; n < 64; ++n)
    if (mcnemar_exact_p(n, 0) < alpha) return n;
  return 64;
}

std::optional<double> pass_at_k(int n, int c, int k) {
  if (k <= 0 || k > n || c < 0 || c > n) return std::nullopt;
  if (n - c < k) return 1.0;
  double product = 1;
  for (int i = n - c + 1; i <= n; ++i) product *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - product;
}

std::optional<double> pass_hat_k(int n, int c, int k) {
  if (k <= 0 || k > n || c < 0 || c > n) return std::nullopt;
  if (c < k) return 0.0;
  double ratio = 1;  // C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i)
  for (int i = 0; i < k; ++i) ratio *= static_cast<double>(c - i) / (n - i);
  return ratio;
}

BootstrapResult paired_bootstrap_lift(const std::vector<double>& with_rates,
                                      const std::vector<double>& without_rates, int resamples,
                                      std::uint64_t seed, double confidence) {
  BootstrapResult result;
  result.resamples = resamples;
  result.seed = seed;
  const std::size_t n = std::min(with_rates.size(), without_rates.size());
  if (n == 0) return result;
  std::vector<double> diffs(n);
  for (std::size_t i = 0; i < n; ++i) diffs[i] = with_rates[i] - without_rates[i];
  double mean = 0;
  for (double d : diffs) mean += d;
  result.estimate = mean / static_cast<double>(n);
  std::mt19937_64 rng(seed);
  std::vector<double> means;
  means.reserve(static_cast<std::size_t>(resamples));
  for (int b = 0; b < resamples; ++b) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      sum += diffs[rng() % n];  // modulo bias is ~n/2^64: negligible
    means.push_back(sum / static_cast<double>(n));
  }
  std::sort(means.begin(), means.end());
  const double tail = (1 - confidence) / 2;
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(means.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, means.size() - 1);
    return means[lo] + (means[hi] - means[lo]) * (pos - static_cast<double>(lo));
  };
  result.interval = {at(tail), at(1 - tail)};
  return result;
}

double token_savings(double with_tokens, double baseline_tokens) {
  return baseline_tokens <= 0 ? 0.0 : 1.0 - with_tokens / baseline_tokens;
}

bool is_beneficial(double lift, double savings) {
  return lift > 0.05 || (lift >= 0 && savings > 0.2);
}

std::optional<std::string> small_sample_warning(long long cases, double alpha) {
  const int needed = min_discordant_for_significance(alpha);
  if (cases >= needed) return std::nullopt;
  return fmt::format(
      "{} paired case{} cannot show a significant lift: even if every case flips in one direction, "
      "the exact "
      "McNemar test needs at least {} discordant cases for p < {:g}",
      cases, cases == 1 ? "" : "s", needed, alpha);
}

}  // namespace upskill::eval::stats
