// Device argmax against its CPU twin (argmax_ref).
#include <cmath>
#include <limits>

#include "gpu_test_support.hpp"
#include "inferlab/kernels/cuda/sampling_cuda.hpp"

using namespace inferlab;
using cuda::DeviceBuffer;
namespace k = inferlab::kernels;

namespace {

int run_argmax(int version, const std::vector<float>& x) {
  DeviceBuffer<float> dx(x);
  DeviceBuffer<int> out(1);
  k::argmax_cuda(version, out.data(), dx.data(), int(x.size()));
  return out.to_host()[0];
}

}  // namespace

TEST_CASE("argmax: every CUDA version equals the reference, ties to the lower index",
          "[gpu][kernel][sampling]") {
  test::require_gpu();
  for (int v = 1; v <= k::argmax_cuda_versions(); ++v) {
    INFO("argmax v" << v);
    for (int n : {1, 31, 33, 4097, 32001}) {
      INFO("n = " << n);
      auto x = test::random_floats(n, -10, 10, unsigned(n));
      CHECK(run_argmax(v, x) == k::argmax_ref(x.data(), n));
      // A tie between the last and the middle element: the lower index wins.
      x[n / 2] = 100.0f;
      x[n - 1] = 100.0f;
      CHECK(run_argmax(v, x) == k::argmax_ref(x.data(), n));
      CHECK(run_argmax(v, x) == n / 2);
      // Masked logits (-inf) and a NaN are never chosen over a finite value.
      std::vector<float> masked(n, -std::numeric_limits<float>::infinity());
      masked[n - 1] = -5.0f;
      if (n > 1) masked[0] = std::numeric_limits<float>::quiet_NaN();
      CHECK(run_argmax(v, masked) == n - 1);
      CHECK(k::argmax_ref(masked.data(), n) == n - 1);
    }
  }
}
