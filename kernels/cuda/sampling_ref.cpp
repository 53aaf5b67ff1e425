// CPU twins of the device sampling kernels (sampling.cu): the specification they are tested
// against. Kept apart from common/'s sampler so that the kernels library stands alone.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "inferlab/kernels/cuda/sampling_cuda.hpp"

namespace inferlab::kernels {

int argmax_ref(const float* x, int n) {
  int best = -1;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    if (best < 0 || x[i] > x[best]) best = i;
  }
  return best < 0 ? 0 : best;
}

int top_p_sample_ref(const float* logits, int n, float temperature, float top_p, float u) {
  float max = -INFINITY;
  for (int i = 0; i < n; ++i) max = std::max(max, logits[i]);
  std::vector<float> p(n);
  double total = 0.0;
  for (int i = 0; i < n; ++i) {
    p[i] = std::exp((logits[i] - max) / temperature);
    total += p[i];
  }
  // tau: walk the probabilities from the largest down until their mass reaches top_p * total.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  const double threshold = double(top_p) * total;
  double mass = 0.0;
  float tau = 0.0f;
  for (int i : order) {
    mass += p[i];
    tau = p[i];
    if (mass >= threshold) break;
  }
  double kept = 0.0;
  int last_kept = 0;
  for (int i = 0; i < n; ++i) {
    if (p[i] > 0.0f && p[i] >= tau) {
      kept += p[i];
      last_kept = i;
    }
  }
  const double target = double(u) * kept;
  double cdf = 0.0;
  for (int i = 0; i < n; ++i) {
    if (!(p[i] > 0.0f && p[i] >= tau)) continue;
    cdf += p[i];
    if (cdf > target) return i;
  }
  return last_kept;
}

}  // namespace inferlab::kernels
