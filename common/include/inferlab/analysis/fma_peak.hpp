#pragma once
/// @file fma_peak.hpp
/// @brief A probe of this machine's peak float32 multiply-add throughput (the CPU's compute
/// roof), the counterpart of the bandwidth probe of membw.hpp.

namespace inferlab {

/// @brief Result of an FMA probe.
struct FmaPeakResult {
  double flops = 0.0;    ///< best FLOP/s over the repetitions (a multiply-add counts as 2 FLOPs)
  int threads = 0;       ///< OpenMP threads that ran (the default resolved when 0 was asked)
  int vector_width = 0;  ///< floats per vector register the probe was compiled for (4, 8 or 16)
};

/// @brief Runs independent chains of vector multiply-adds that never touch memory, on
/// @p threads OpenMP threads, @p reps times, and reports the best FLOP/s.
/// @param threads OpenMP threads (0 = OpenMP's default)
/// @param reps timed repetitions of about 20 ms each (at least 1)
/// @return the measured peak; no kernel can exceed it on this machine for this -march.
/// @note Uses the widest vectors the build targets (AVX-512, AVX2 or SSE) and enough
/// independent accumulators to cover the multiply-add latency. A CPU without FMA runs a
/// multiply and an add instead, still counted as 2 FLOPs.
FmaPeakResult measure_fma_peak(int threads = 0, int reps = 5);

}  // namespace inferlab
