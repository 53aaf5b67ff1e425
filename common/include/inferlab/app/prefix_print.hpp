#pragma once
/// @file prefix_print.hpp
/// @brief Chapter 06's text: the prefix cache study (serving/prefix_report.hpp) printed to stdout.

#include "inferlab/serving/prefix_report.hpp"

namespace inferlab {

/// @brief Prints @p study: one column per cache (hit rates, prefill tokens, evictions, TTFT,
/// throughput, steps, the cache's size), each cache against none, the radix cache in the other
/// order, whether the tokens agreed (a real clock only), the side channel with and without a
/// tenant salt, and the worked example.
/// @param study the study's results
/// @param simulated the runs used a simulated clock, whose tokens are placeholders
void print_prefix_study(const PrefixStudy& study, bool simulated);

}  // namespace inferlab
