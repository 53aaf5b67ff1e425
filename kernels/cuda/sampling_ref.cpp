// CPU twin of the device sampling kernel (sampling.cu): the specification they are tested
// against. Kept apart from common/'s sampler so that the kernels library stands alone.
#include <cmath>

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

}  // namespace inferlab::kernels
