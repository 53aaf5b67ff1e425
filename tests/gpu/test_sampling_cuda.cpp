// Device sampling against its CPU twins (argmax_ref, top_p_sample_ref).
#include <cmath>
#include <limits>
#include <set>

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

TEST_CASE("top-p sampling: every CUDA version follows the reference", "[gpu][kernel][sampling]") {
  test::require_gpu();
  int exact = 0, boundary = 0;
  for (int v = 1; v <= k::top_p_sample_cuda_versions(); ++v) {
    for (int n : {1, 33, 4097, 32001}) {
      const auto logits = test::random_floats(n, -6, 6, unsigned(n) + 1);
      DeviceBuffer<float> dl(logits);
      DeviceBuffer<int> out(1);
      for (float temperature : {0.7f, 1.0f}) {
        for (float top_p : {0.1f, 0.5f, 0.9f, 1.0f}) {
          for (float u : {0.0f, 0.3f, 0.77f, 0.999f}) {
            k::top_p_sample_cuda(v, out.data(), dl.data(), n, temperature, top_p, u);
            const int got = out.to_host()[0];
            const int want = k::top_p_sample_ref(logits.data(), n, temperature, top_p, u);
            INFO("top_p v" << v << " n=" << n << " T=" << temperature << " top_p=" << top_p
                           << " u=" << u << ": got " << got << ", reference " << want);
            REQUIRE(got >= 0);
            REQUIRE(got < n);
            if (got == want) {
              ++exact;
              continue;
            }
            // Float sums in another order: accept only a token the reference picks when u or
            // top_p moves by 1e-4 (a draw within round-off of a CDF or nucleus boundary).
            std::set<int> near;
            for (float du : {-1e-4f, 1e-4f}) {
              for (float dp : {-1e-4f, 0.0f, 1e-4f}) {
                const float uu = std::fmin(std::fmax(u + du, 0.0f), 0.99999f);
                const float pp = std::fmin(std::fmax(top_p + dp, 1e-6f), 1.0f);
                near.insert(k::top_p_sample_ref(logits.data(), n, temperature, pp, uu));
              }
            }
            CHECK(near.count(got) == 1);
            ++boundary;
          }
        }
      }
      REQUIRE_THROWS_AS(k::top_p_sample_cuda(v, out.data(), dl.data(), n, 0.0f, 0.9f, 0.5f),
                        std::invalid_argument);
      REQUIRE_THROWS_AS(k::top_p_sample_cuda(v, out.data(), dl.data(), n, 1.0f, 0.0f, 0.5f),
                        std::invalid_argument);
      REQUIRE_THROWS_AS(k::top_p_sample_cuda(v, out.data(), dl.data(), n, 1.0f, 0.9f, 1.0f),
                        std::invalid_argument);
    }
  }
  INFO(exact << " exact, " << boundary << " at a boundary");
  CHECK(boundary * 10 <= exact);  // boundary cases must stay rare
}

TEST_CASE("top-p sampling keeps only the nucleus", "[gpu][kernel][sampling]") {
  test::require_gpu();
  // Probabilities proportional to 8, 4, 2, 1, 1 (logits = log of them; mass 16): top_p = 0.45
  // keeps only token 0 (8/16 >= 0.45); 0.7 keeps tokens 0 and 1 (12/16 >= 0.7), drawn 8:4.
  // (Thresholds away from exact boundaries, so round-off cannot decide.)
  const std::vector<float> logits = {std::log(8.0f), std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  DeviceBuffer<float> dl(logits);
  DeviceBuffer<int> out(1);
  for (int v = 1; v <= k::top_p_sample_cuda_versions(); ++v) {
    for (float u : {0.0f, 0.5f, 0.99f}) {
      k::top_p_sample_cuda(v, out.data(), dl.data(), 5, 1.0f, 0.45f, u);
      CHECK(out.to_host()[0] == 0);
      k::top_p_sample_cuda(v, out.data(), dl.data(), 5, 1.0f, 0.7f, u);
      CHECK(out.to_host()[0] == (u < 8.0f / 12.0f ? 0 : 1));
    }
  }
}
