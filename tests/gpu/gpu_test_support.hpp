#pragma once
// Helpers for the [gpu] tests: the honest skip, device round trips, random inputs, and the
// llm.c-style comparison (atol + rtol*|ref|, max error and first mismatch reported).
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "inferlab/kernels/cuda/device.hpp"
#include "../test_support.hpp"

namespace inferlab::test {

/// Call first in every [gpu] test. No usable device: prints "SKIPPED: no CUDA device (why)" and
/// exits with INFERLAB_SKIP_CODE (CTest: skipped), or fails when INFERLAB_REQUIRE_GPU=1 (set by
/// scripts/gpu_check.sh, so that a broken driver cannot pass as "all skipped").
inline void require_gpu() {
  std::string why;
  if (cuda::cuda_device_available(&why)) return;
  const char* env = std::getenv("INFERLAB_REQUIRE_GPU");
  if (env && std::string(env) == "1")
    FAIL("no CUDA device (" << why << ") and INFERLAB_REQUIRE_GPU=1");
  std::printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
  std::fflush(stdout);
  std::exit(INFERLAB_SKIP_CODE);
}

/// Uniform random floats in [lo, hi).
inline std::vector<float> random_floats(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Random integers in [lo, hi] stored as floats: sums of their products are exact in fp32 (as
/// long as they stay below 2^24), so every correct matmul version must match exactly.
inline std::vector<float> random_integers(std::size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = float(dist(rng));
  return v;
}

/// Compares and, on failure, says where: the Catch2 message names the case, the max error and
/// the first mismatch with both values.
inline bool check_close(const std::string& what, const std::vector<float>& got,
                        const std::vector<float>& want, double atol, double rtol) {
  if (got.size() != want.size()) {
    UNSCOPED_INFO(what << ": size " << got.size() << " != " << want.size());
    return false;
  }
  const CloseReport r = all_close(got, want, long(want.size()), atol, rtol);
  if (!r.ok) {
    UNSCOPED_INFO(what << ": max abs error " << r.max_abs_err << ", first mismatch at "
                       << r.first_bad << ": got " << got[r.first_bad] << ", want "
                       << want[r.first_bad] << " (atol " << atol << ", rtol " << rtol << ")");
  }
  return r.ok;
}

}  // namespace inferlab::test
