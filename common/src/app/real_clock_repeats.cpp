// Medians and ranges of real-clock numbers over repeated runs (see real_clock_repeats.hpp).
#include "inferlab/app/real_clock_repeats.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/metrics.hpp"

namespace inferlab {

Repeated repeated(std::span<const double> values) {
  if (values.empty()) throw Error("repeated(): no runs");
  const Summary s = summarize(values);
  return {s.p50, s.min, s.max, s.count};
}

std::string ratio_text(const Repeated& ratio) {
  if (ratio.runs < 2) return fmt::format("{:.2f}x", ratio.median);
  return fmt::format("{:.2f}x [{:.2f}-{:.2f}x over {} runs]", ratio.median, ratio.min, ratio.max,
                     ratio.runs);
}

std::string too_noisy_text(const std::string& what, const Repeated& ratio) {
  if (ratio.runs < 2)
    return fmt::format(
        "{} was {:.2f}x in a single run: noise unknown, no conclusion (rerun with "
        "--reps 3 or more)",
        what, ratio.median);
  return fmt::format(
      "{} ranged from {:.2f}x to {:.2f}x over {} runs: too noisy to tell which is faster "
      "(rerun with --threads 1, more --reps, or on a quieter machine)",
      what, ratio.min, ratio.max, ratio.runs);
}

}  // namespace inferlab
