#pragma once
// What every kernel benchmark shares: the skip, the device's peaks, validation against the CPU
// reference, event timing (warm-up, then the median of adaptive repetitions), and the report.
//
// Peaks are approximations from device attributes:
//   bandwidth  = 2 (DDR) * memory clock * bus width / 8;
//   FP32 FLOPs = SMs * SM clock * FP32 lanes per SM (64 or 128, by compute capability) * 2 (FMA).
// Both use the maximum clocks; sustained values are lower (about 90% of the bandwidth is a
// good result), so read the percentages as "how far from the roof", not as efficiency.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "inferlab/kernels/cuda/device.hpp"

namespace inferlab::bench {

inline cuda::DeviceInfo start(const char* op) {
  std::string why;
  if (!cuda::cuda_device_available(&why)) {
    std::printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
    std::exit(77);
  }
  const cuda::DeviceInfo d = cuda::device_info();
  std::printf(
      "== bench_%s on %s (sm_%d%d, %d SMs): peak %.0f GB/s, %.1f FP32 TFLOP/s "
      "(%d lanes/SM x %.2f GHz)\n",
      op, d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count, d.peak_bandwidth_gbs,
      d.peak_fp32_tflops, d.fp32_lanes_per_sm, d.sm_clock_ghz);
  return d;
}

inline std::vector<float> random_floats(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// |got - want| <= atol + rtol*|want| everywhere (non-finite references skipped); prints
/// PASS, or FAIL with the max error and the first mismatch.
inline bool validate(const std::string& what, int version, const std::vector<float>& got,
                     const std::vector<float>& want, double atol, double rtol) {
  double max_err = 0.0;
  long first_bad = -1;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i])) continue;
    const double err = std::fabs(double(got[i]) - want[i]);
    max_err = std::max(max_err, err);
    if (!(err <= atol + rtol * std::fabs(want[i])) && first_bad < 0) first_bad = long(i);
  }
  if (first_bad < 0) {
    std::printf("  %-28s v%d  PASS  (max abs error %.2e)\n", what.c_str(), version, max_err);
    return true;
  }
  std::printf("  %-28s v%d  FAIL  max abs error %.2e, first mismatch [%ld]: got %.6g want %.6g\n",
              what.c_str(), version, max_err, first_bad, got[first_bad], want[first_bad]);
  return false;
}

/// Median milliseconds of @p launch (which enqueues on the default stream). One warm-up call,
/// then enough repetitions for ~200 ms (at least 3, at most 50).
template <class F>
float time_ms(F&& launch) {
  cuda::EventTimer timer;
  timer.start();
  launch();
  const float first = timer.stop_ms();
  const int reps = std::clamp(int(200.0f / std::max(first, 1e-3f)), 3, 50);
  std::vector<float> ms(reps);
  for (int r = 0; r < reps; ++r) {
    timer.start();
    launch();
    ms[r] = timer.stop_ms();
  }
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}

/// The best result of one benchmark case, printed as the line scripts/gpu_check.sh collects.
struct Best {
  int version = 0;
  double value = 0.0;
};

enum class Unit { GBs, TFLOPs };

/// Prints one timing line and keeps the best. @p amount is bytes (GBs) or FLOPs (TFLOPs).
inline void report(const cuda::DeviceInfo& d, const std::string& what, int version, float ms,
                   double amount, Unit unit, Best& best) {
  const double value =
      unit == Unit::GBs ? amount / (ms * 1e-3) * 1e-9 : amount / (ms * 1e-3) * 1e-12;
  const double peak = unit == Unit::GBs ? d.peak_bandwidth_gbs : d.peak_fp32_tflops;
  std::printf("  %-28s v%d  %9.4f ms  %9.2f %s  (%5.1f%% of peak)\n", what.c_str(), version, ms,
              value, unit == Unit::GBs ? "GB/s" : "TFLOP/s", 100.0 * value / peak);
  if (value > best.value) best = {version, value};
}

inline void summary(const cuda::DeviceInfo& d, const std::string& what, const Best& best, Unit unit,
                    int best_constant) {
  const double peak = unit == Unit::GBs ? d.peak_bandwidth_gbs : d.peak_fp32_tflops;
  std::printf("SUMMARY %-28s fastest v%d: %.2f %s (%.1f%% of peak); k...BestVersion = v%d\n",
              what.c_str(), best.version, best.value, unit == Unit::GBs ? "GB/s" : "TFLOP/s",
              100.0 * best.value / peak, best_constant);
}

}  // namespace inferlab::bench
