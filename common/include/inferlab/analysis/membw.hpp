#pragma once
/// @file membw.hpp
/// @brief A STREAM-style probe of this machine's memory read bandwidth.

#include <cstddef>

namespace inferlab {

/// @brief Result of a bandwidth probe.
struct BandwidthResult {
  double read_gbs = 0.0;  ///< best read bandwidth over the repetitions, GB/s (1e9 bytes/s)
  int threads = 0;        ///< OpenMP threads that read (the default resolved when 0 was asked)
  std::size_t bytes = 0;  ///< size of the buffer read
};

/// @brief Sums a buffer of @p bytes (much larger than the caches) with @p threads OpenMP
/// threads, @p reps times, and reports the best read bandwidth. threads = 0: OpenMP's default.
BandwidthResult measure_read_bandwidth(std::size_t bytes = std::size_t{1} << 30, int threads = 0,
                                       int reps = 5);

}  // namespace inferlab
