#pragma once
// Honest statistics for small with/without samples (docs/eval.md): a Wilson interval
// per arm, the paired table on identical cases with an exact McNemar p-value, pass@k and pass^k for
// repeats, and a seeded paired bootstrap of the lift across cases (cases, never runs, are the
// unit).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace upskill::eval::stats {

constexpr double kZ95 = 1.959963984540054;

struct Interval {
  double low = 0;
  double high = 0;
  bool contains(double x) const { return low <= x && x <= high; }
};

// Wilson score interval for successes/n (n = 0 gives [0, 1]).
Interval wilson(long long successes, long long n, double z = kZ95);
// The same over fractional successes (a sum of per-case pass rates when cases were repeated).
Interval wilson_fractional(double successes, double n, double z = kZ95);

// Paired outcomes on the same cases: b = pass with the skill only, c = pass without it only.
struct PairedTable {
  long long both = 0;
  long long with_only = 0;     // b
  long long without_only = 0;  // c
  long long neither = 0;

  long long n() const { return both + with_only + without_only + neither; }
  double lift() const;  // (b - c) / n
  void add(bool with_passed, bool without_passed);
};

// Exact two-sided McNemar test: min(1, 2 * sum_{i <= min(b,c)} C(b+c, i) / 2^(b+c)); 1 when b+c =
// 0.
double mcnemar_exact_p(long long b, long long c);

// The fewest discordant pairs, all in one direction, that reach p < alpha (6 for 0.05).
int min_discordant_for_significance(double alpha = 0.05);

// pass@k = 1 - C(n-c, k) / C(n, k) (Chen et al.), pass^k = C(c, k) / C(n, k) (tau-bench).
// nullopt when k > n.
std::optional<double> pass_at_k(int n, int c, int k);
std::optional<double> pass_hat_k(int n, int c, int k);

// Percentile bootstrap of mean(with_i - without_i) over cases, resampling case indices with a
// seeded generator (mt19937_64, so the interval is the same on every machine).
struct BootstrapResult {
  double estimate = 0;
  Interval interval;
  int resamples = 0;
  std::uint64_t seed = 0;
};
BootstrapResult paired_bootstrap_lift(const std::vector<double>& with_rates,
                                      const std::vector<double>& without_rates,
                                      int resamples = 10000, std::uint64_t seed = 20261202,
                                      double confidence = 0.95);

// upskill's token savings (1 - with/base, 0 when base is 0) and its verdict.
double token_savings(double with_tokens, double baseline_tokens);
bool is_beneficial(double lift, double savings);

// A warning when `cases` paired cases can never give a significant lift at alpha, else nullopt.
std::optional<std::string> small_sample_warning(long long cases, double alpha = 0.05);

}  // namespace upskill::eval::stats
