#pragma once
/// @file chi_square.hpp
/// @brief Pearson's chi-square goodness-of-fit test: do observed counts match a known
/// distribution? Chapter 07 uses it to show that speculative decoding samples exactly the
/// target's distribution.

#include <span>

namespace inferlab {

/// @brief The outcome of chi_square_test().
struct ChiSquareResult {
  double statistic = 0.0;  ///< sum over bins of (observed - expected)^2 / expected
  int bins = 0;            ///< bins after pooling
  int dof = 0;             ///< degrees of freedom: bins - 1
  double p_value = 1.0;    ///< P(chi-square with dof degrees >= statistic)
  long samples = 0;        ///< total observed count
};

/// @brief Goodness of fit of @p observed counts to the probabilities @p expected.
///
/// The approximation behind the test needs every bin's expected count to be large enough, so
/// the categories whose expected count is below @p min_expected are pooled into one bin (and
/// that bin, if still too small, into the smallest regular bin). An observation in a category
/// of probability 0 makes the p-value 0: no sampler of @p expected could have produced it.
/// @param expected (n) category probabilities (summing to 1 up to round-off)
/// @param observed (n) counts
/// @param min_expected smallest expected count a bin may have (Cochran's rule: 5)
/// @throws inferlab::Error if the sizes differ, nothing was observed, or fewer than two bins
/// remain.
ChiSquareResult chi_square_test(std::span<const double> expected, std::span<const long> observed,
                                double min_expected = 5.0);

/// @brief Upper tail of the chi-square distribution: P(X >= x) for @p dof degrees of freedom,
/// the regularised upper incomplete gamma function Q(dof / 2, x / 2) (series below a + 1,
/// continued fraction above, as in Numerical Recipes 6.2).
double chi_square_survival(double x, int dof);

}  // namespace inferlab
