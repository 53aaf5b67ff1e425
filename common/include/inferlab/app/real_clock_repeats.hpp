#pragma once
/// @file real_clock_repeats.hpp
/// @brief A real-clock number measured in several runs of the same work: its median and its
/// range, and whether the range is narrow enough to support a conclusion about a ratio.
///
/// Chapters 05 and 06 serve the same workload several times on the real clock (`--reps`) and
/// print the medians; a ratio whose runs fall on both sides of 1 (one run says faster, another
/// slower) is reported as too noisy instead of as a result.

#include <span>
#include <string>

namespace inferlab {

/// @brief The median and range of one number over repeated runs.
struct Repeated {
  double median = 0.0;  ///< the median of the runs
  double min = 0.0;     ///< the smallest run
  double max = 0.0;     ///< the largest run
  int runs = 0;         ///< how many runs

  /// @brief (max - min) / median: 0 for one run or a zero median.
  double spread() const { return median > 0.0 ? (max - min) / median : 0.0; }
  /// @brief True when a ratio's runs fall on both sides of 1, or there was one run: the run
  /// cannot say which side is faster.
  bool direction_unclear() const { return runs < 2 || (min < 1.0 && max > 1.0); }
};

/// @brief The median and range of @p values (one per run; at least one).
/// @throws inferlab::Error if @p values is empty.
Repeated repeated(std::span<const double> values);

/// @brief A ratio for a sentence: "1.29x" for one run, "1.29x [1.10-1.40x over 3 runs]" for
/// several.
std::string ratio_text(const Repeated& ratio);

/// @brief The line that replaces a conclusion the runs do not support: "@p what ranged from
/// 0.80x to 1.30x over 3 runs: too noisy to tell which is faster; ..." with the advice to rerun
/// with --threads 1, more --reps or on a quieter machine.
std::string too_noisy_text(const std::string& what, const Repeated& ratio);

}  // namespace inferlab
