#pragma once
/// @file prefix_print.hpp
/// @brief Chapter 06's text: the prefix cache study (serving/prefix_report.hpp) printed to stdout.

#include <vector>

#include "inferlab/app/real_clock_repeats.hpp"
#include "inferlab/serving/prefix_report.hpp"

namespace inferlab {

/// @brief A study run several times on the real clock: what its timed numbers did over the runs.
struct PrefixStudyRepeats {
  int runs = 1;  ///< studies behind the medians (1 on the simulated clock)
  /// Per summary of the study: the run without a cache's TTFT p50 over this cache's, per run
  /// (the "off" column's entry is 1).
  std::vector<Repeated> ttft_p50_ratio;
  /// Per summary of the study: this cache's throughput over the run without a cache's.
  std::vector<Repeated> throughput_ratio;
  double max_spread = 0.0;  ///< the widest (max - min) / median of the timed cells
};

/// @brief The study to print from @p studies (the same study run one or more times): the first
/// with its timed numbers (TTFT p50 and p99, throughput, the side channel's TTFTs) replaced by
/// their medians over the runs, and @p repeats filled with their ranges.
/// @param studies one study per run, at least one
/// @param repeats out: the runs' ratios and spreads
/// @return the median study
/// @throws inferlab::Error if @p studies is empty.
PrefixStudy median_study(const std::vector<PrefixStudy>& studies, PrefixStudyRepeats& repeats);

/// @brief Prints @p study: one column per cache (hit rates, prefill tokens, evictions, TTFT,
/// throughput, steps, the cache's size), each cache against none, the radix cache in the other
/// order, whether the tokens agreed (a real clock only), the side channel with and without a
/// tenant salt, and the worked example. On the real clock, each comparison with no cache is a
/// median over the runs with its range, and one whose runs disagree on the direction is
/// printed as too noisy.
/// @param study the study's results (median_study() of the runs)
/// @param simulated the runs used a simulated clock, whose tokens are placeholders
/// @param repeats the runs behind @p study's timed numbers
void print_prefix_study(const PrefixStudy& study, bool simulated,
                        const PrefixStudyRepeats& repeats);

}  // namespace inferlab
