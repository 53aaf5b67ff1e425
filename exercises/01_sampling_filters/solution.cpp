// Exercise 01, the checked answer: the top-p and min-p filters.

#include <algorithm>
#include <numeric>
#include <vector>

#include "exercise.hpp"

namespace inferlab::ex01 {

void top_p_filter(std::span<float> probs, float top_p) {
  if (top_p >= 1.0f || probs.empty()) return;

  // Measure mass against the actual total: earlier filters (top-k, min-p) may have zeroed
  // entries without renormalising. Sum in double so a large vocabulary does not drift.
  double total = 0.0;
  for (float p : probs) total += p;
  const double target = static_cast<double>(top_p) * total;

  // Most probable first; the stable sort makes ties deterministic (lower id first).
  std::vector<int> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });

  // Keep a token while the mass before it is below the target: the token that crosses the
  // threshold is therefore kept, and everything after it is cut.
  double mass_before = 0.0;
  for (int id : order) {
    if (mass_before >= target) {
      probs[id] = 0.0f;
    } else {
      mass_before += probs[id];
    }
  }
}

void min_p_filter(std::span<float> probs, float min_p) {
  if (min_p <= 0.0f || probs.empty()) return;
  const float p_max = *std::max_element(probs.begin(), probs.end());
  const float threshold = min_p * p_max;  // scales with the model's confidence
  for (float& p : probs) {
    if (p < threshold) p = 0.0f;
  }
}

}  // namespace inferlab::ex01
